// Package component holds what the agent's pluggable parts (the input and
// output types) share, so that neither the config layer nor the views of a
// running agent know one type from another:
//
//   - Registry: the factories of one kind of part, by the `type` of their
//     agent.yaml section;
//   - PathAnchor and Adviser: what the config layer asks of a part's
//     config (anchor relative paths, advise on settings likely wrong);
//   - Description: what a running part says of itself (named counters,
//     gauges and fields, with their help and labels, a line for people),
//     which the status document, /metrics, `edge-agent status` and `top`
//     render as given.
//
// It imports no package of the repository.
package component
