package input

import "github.com/edge-agent/edge-agent/connector/component"

// Describer is implemented by every input type: what it read and holds,
// for the status document, /metrics, `edge-agent status` and `top`, which
// render the Description as given and know no input type. Describe is
// called from other goroutines than the one driving the input, so it must
// be safe for concurrent use.
type Describer = component.Describer

// The status keys of the figures every input reports (Counts).
const (
	KeyLinesRead      = "lines_read"
	KeyBytesRead      = "bytes_read"
	KeyEvents         = "events"
	KeyTruncatedLines = "truncated_lines"
	KeyErrors         = "errors"
	KeyFiltered       = "events_filtered"
	KeyRestarts       = "restarts"
	KeyDroppedFull    = "dropped_queue_full"
)

// Counts are the figures every input reports, under the same keys and
// series whatever its type, so that /metrics and the status document keep
// one shape across types (a series an alert reads exists for every
// input). An input that does not count one leaves it 0.
type Counts struct {
	// LinesRead are the records read before any grouping (lines, journal
	// entries, syslog messages, relayed batches).
	LinesRead int64
	BytesRead int64
	// Events are the data events produced (lines or multiline groups).
	Events int64
	// TruncatedLines were cut to the input's maximum line size.
	TruncatedLines int64
	// Errors were skipped or returned.
	Errors int64
	// Filtered are events the input's include-lines/exclude-lines dropped.
	Filtered int64
	// Restarts of a process the input reads from (journald: journalctl).
	Restarts int64
	// DroppedQueueFull are messages dropped because the input's own queue
	// was full (a UDP sender cannot be made to wait).
	DroppedQueueFull int64
}

// HelpParseErrors and HelpConnections are the help of
// input_parse_errors_total and input_connections, shared by every input
// that reports them.
const (
	HelpParseErrors = "Messages an input delivered raw because they did not parse."
	HelpConnections = "Connections open to an input that listens (syslog, http)."
)

// HelpDropped is the help of input_dropped_total, shared by every input
// that reports a reason of its own.
const HelpDropped = "Messages an input dropped before the WAL, by reason (queue_full: a UDP syslog input's queue was full; malformed: not well-formed syslog, strict; receive_buffer: datagrams the kernel dropped, the socket's receive buffer full)."

// Values are c as the Values every input's Description starts with.
func (c Counts) Values() []component.Value {
	return []component.Value{
		{Key: KeyLinesRead, N: c.LinesRead},
		{Key: KeyBytesRead, N: c.BytesRead, Metric: "bytes_read_total", Total: true,
			Help: "Raw bytes the input read."},
		{Key: KeyEvents, N: c.Events},
		{Key: KeyTruncatedLines, N: c.TruncatedLines, Metric: "lines_truncated_total", Total: true,
			Help: "Lines cut to the input's maximum line size."},
		{Key: KeyErrors, N: c.Errors},
		{Key: KeyFiltered, N: c.Filtered, Metric: "input_events_filtered_total",
			Help: "Events an input's include-lines/exclude-lines dropped (their positions still advance)."},
		{Key: KeyRestarts, N: c.Restarts, Metric: "input_restarts_total",
			Help: "Restarts of a process an input reads from (journald: journalctl) after it exited or hung."},
		{Key: KeyDroppedFull, OmitZero: true, N: c.DroppedQueueFull, Metric: "input_dropped_total",
			Labels: []component.Label{{Name: "reason", Value: "queue_full"}},
			Help:   HelpDropped},
	}
}
