// Package account holds the fields by which a sink can check, without
// trusting the agent, that it got every row an input produced or a record
// saying why not (agent.account):
//
//   - every row the agent stores is stamped, as the last members of its
//     event object, with "_input" (the input id) and "_seq" (a number that
//     starts at 1 and grows by one per row of that input, never reused);
//   - every row given up undelivered (dropped by queue.when-full or
//     queue.max-age-ms, DEAD, purged, lost to a damaged block) is
//     accounted for by a gap record (Record), itself a row delivered like
//     any other, naming the input and the "_seq" range it stands for;
//   - Audit reads delivered rows back and checks that the "_seq" values
//     and gap ranges of each input cover 1..max exactly once.
//
// The package is pure: byte slices in, byte slices out, no I/O but the
// reader Audit is given.
package account
