// Package clockjump detects jumps of the wall clock and repairs the event
// times ("_ts") stamped before one.
//
// Many gateways have no real-time clock: they boot at 1970 and the time
// is set later (NTP, an operator). A row stamped before that has a
// useless "_ts". The agent records, beside its rows, the offset between
// the wall clock and a monotonic clock counting from boot (wall minus
// monotonic), as epochs: a new epoch starts, at the first row appended
// after it, whenever that offset moved by more than Threshold, or the
// host booted again. A row of an older epoch of the current boot is
// corrected on send by the difference between the offset now and its
// epoch's offset (its time as the clock set now would have stamped it),
// and marked "_ts_repaired": true.
//
// Limits: rows of an earlier boot are corrected only to the last offset
// recorded in that boot (the monotonic clock restarts at a boot, so
// nothing relates its rows to the clock now): rows of a boot whose clock
// was never set before it ended are sent as stamped. Rows read within
// one commit of the jump may be counted with the epoch after it. A slew
// (NTP's gradual correction) is below the threshold and not corrected.
// Only the first "_ts" member of an event object is rewritten.
package clockjump
