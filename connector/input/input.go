// Package input declares what the agent's scheduler needs from an input and
// a registry of input types keyed by the `input.type` config value, so new
// input types plug in without touching the scheduler.
package input

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/connector/component"
)

// Position is the resume state of one source inside an input (for the file
// input: one file identity). The scheduler stores it in the same WAL
// transaction as the events read before it, and hands it back to Open.
type Position struct {
	// Key names the source inside the input; stable across restarts.
	Key string
	// State is opaque to the scheduler. Nil means: forget this key.
	State []byte
}

// Event is one record read from an input, or a position-only update.
type Event struct {
	// Payload is the event JSON sent as one __BATCH__ (RAW form). Nil means
	// the event carries only a position change (for example a file tailed
	// from its end, truncated, or deleted) and produces no WAL row.
	Payload []byte
	// Pos is the position just after this event. An event may carry none
	// (Key "") when a later event of the same Poll (or Drain) result
	// carries the position of its key: building a position per line
	// costs more than the scheduler, which stores the events of whole
	// Poll results together and keeps only the last position per key,
	// would use.
	Pos Position
	// Loss, when set, reports bytes of a source the input will never
	// read. Such an event carries no payload. The scheduler records it in
	// the stream as a gap record (agent.account), in order with the
	// input's rows, and ignores it otherwise.
	Loss *Loss
}

// Loss reasons (Loss.Reason).
const (
	// LossDeleted: the file was deleted (its identity now holds another
	// file) before it was read to its end.
	LossDeleted = "deleted-unread"
	// LossGone: the file was deleted or rotated away out of the input's
	// paths before it was read to its end; which of the two is not known.
	LossGone = "gone-unread"
)

// Loss is a run of bytes of one source that was never read: they were
// never rows, so their number is unknown.
type Loss struct {
	// Reason is one of the Loss* constants.
	Reason string
	// Path is the source's name (the file's path).
	Path string
	// From and To are the byte offsets of the run, [From, To).
	From, To int64
}

// OpenOptions is what the scheduler restores at start.
type OpenOptions struct {
	// Saved maps Position.Key to the last stored State.
	Saved map[string][]byte
	// FirstStart is true only when this input has never run against this
	// WAL before (read-from-beginning applies only then).
	FirstStart bool
}

// Input is a source of events. It is used by one goroutine (the scheduler
// loop) and is not safe for concurrent use.
type Input interface {
	// Open starts the input from the saved positions.
	Open(ctx context.Context, opts OpenOptions) error
	// Poll appends up to max events to dst and returns it. It never blocks
	// waiting for data: no data means an empty result. A non-nil error is
	// fatal for the input (on-error: fail); skipped problems are logged.
	Poll(ctx context.Context, dst []Event, max int) ([]Event, error)
	// Drain appends every event still held back (buffered multiline
	// groups) to dst; called at shutdown before Close. Partial lines
	// without a newline are not events and stay unread.
	Drain(dst []Event) []Event
	// Close releases files and goroutines. It is idempotent.
	Close() error
}

// Waker is implemented by inputs that know when new data may be ready
// (the file input watches its folders). The scheduler polls when the
// channel fires instead of waiting out its idle sleep.
type Waker interface {
	Wakeup() <-chan struct{}
}

// Acker is implemented by inputs that must learn when their events are
// stored: a relay answers its senders only once what they sent is in the
// queue, so a sender deletes nothing the relay could still lose.
//
// After each queue transaction that committed events of the input, the
// scheduler calls Committed(n) with how many: the next n events in the
// order Poll and Drain returned them, position-only events included. In
// the WAL that is after the transaction's fsync (when wal.fsync is on);
// in delivery-guarantee NON it is the in-memory queue. Events the
// scheduler never commits (a stop whose last transaction failed) are
// never reported: the input learns it from Close. Committed is called on
// the goroutine that calls Poll and must not block.
type Acker interface {
	Committed(n int)
}

// Rereader is implemented by inputs that can move one source back (or
// forward) while they run: an operator's "read this file again from
// offset N". Reread is called only from the goroutine that drives the
// input, between two Polls. It moves the position and queues a
// position-only event carrying it, returned first by the next Poll, so
// the scheduler stores the new position like any other (after every
// event the input returned before). Lines from there on are read and
// delivered again: duplicates by design.
//
// An error wrapping ErrNotRead means the input does not read path (the
// scheduler may ask another input); any other error is the input's
// refusal (an offset beyond the file's size), to be shown as is.
type Rereader interface {
	Reread(ctx context.Context, path string, offset int64) (RereadResult, error)
}

// ErrNotRead: the input does not read the source named.
var ErrNotRead = errors.New("not read by this input")

// RereadResult is what a Reread did.
type RereadResult struct {
	// Path is the file as the input names it; Identity its position key.
	Path, Identity string
	// Requested is the offset asked for; Start the one reading restarts
	// at: Requested, or the start of the next line when Requested fell
	// inside a line (Aligned true).
	Requested, Start int64
	Aligned          bool
	// Line is the number of lines before Start (the next line read is
	// Line+1).
	Line int64
	// Previous is the position before: just past the last byte delivered.
	Previous int64
	// Size is the file's size when the position moved.
	Size int64
	// Reread are the bytes delivered before that will be delivered again
	// (Previous-Start when Start is before it); Skipped the bytes not
	// delivered yet that never will be (Start-Previous when after).
	Reread, Skipped int64
}

// StatsReporter is implemented by inputs that keep their counters in a
// Stats. It is the inputs' own bookkeeping, read by their Describe: the
// agent and its views read Describe only. Stats is called from other
// goroutines than the one driving the input, so it must be safe for
// concurrent use.
type StatsReporter interface {
	Stats() Stats
}

// PeersReporter is implemented by inputs that others connect to (the
// edgesocket input of a relay), for their own Describe and their tests.
// Both methods are called from other goroutines than the one driving the
// input, so they must be safe for concurrent use.
type PeersReporter interface {
	// Peers lists the connections now open, one entry each.
	Peers() []Peer
	// PeerTotals are the counters per peer name since the input was
	// created, for every name that has connected.
	PeerTotals() []PeerTotals
}

// Peer is one connected sender.
type Peer struct {
	// Name is the name it authenticated as (a token's name).
	Name   string
	Remote string
	Since  time.Time
	// Batches and Bytes were read from it; Received are the batches
	// answered as stored, Refused the others (QUEUE_FULL, decode errors).
	Batches, Bytes, Received, Refused uint64
	// Rate is batches per second over the last few seconds.
	Rate float64
	// Owed are the replies it waits for.
	Owed      int
	LastError string
}

// PeerTotals are the counters of every connection of one name.
type PeerTotals struct {
	Name                                        string
	Connected                                   int
	Sessions, Batches, Bytes, Received, Refused uint64
	LastError                                   string
	LastErrorAt                                 time.Time
}

// FileStatus is one file an input tracks (Description.Files).
type FileStatus = component.FileStatus

// Stats are counters an input may keep since Create (StatsReporter);
// what each type reports is its Describe. Every field is monotonic except
// FilesOpen, FilesTracked and Connections, which are gauges; an input
// leaves the fields it does not count 0.
type Stats struct {
	LinesRead        int64 // complete lines read (before multiline grouping; journald: entries)
	BytesRead        int64 // raw bytes read
	Events           int64 // data events produced (lines or groups)
	TruncatedLines   int64 // lines cut to the input's maximum line size
	InvalidSequences int64 // invalid byte sequences replaced by U+FFFD
	FilesOpen        int64 // open descriptors now
	FilesTracked     int64 // files with a position now
	Rotations        int64 // a path that now names a different file
	Truncations      int64 // files that shrank or were rewritten (restart at 0)
	Errors           int64 // errors skipped or returned
	// Filtered are events dropped by the input's own line filters
	// (include-lines / exclude-lines); their positions still advance.
	Filtered int64
	// LostBytes are bytes known to have been written to files that went
	// away before they could be read (rotated or deleted while closed or
	// while the agent was stopped, and not found again).
	LostBytes int64
	// Restarts counts the times a process the input reads from was
	// started again after it exited or hung (journald: journalctl).
	Restarts int64
	// Network inputs (syslog) count these; the others leave them 0.
	Connections        int64 // open connections now (a gauge)
	ConnectionsTotal   int64 // connections accepted
	ConnectionsRefused int64 // closed at once: no room (every connection had sent data, or the source's cap)
	ParseErrors        int64 // messages delivered raw because they did not parse
	// DroppedQueueFull are messages dropped because the input's own queue
	// was full (a UDP sender cannot be made to wait).
	DroppedQueueFull int64
	// Inputs that authenticate their clients (edgesocket) count the
	// connections that did not, by reason (a fixed, small set), and those
	// closed unauthenticated to make room for newer ones.
	AuthFailures []Count
	Evicted      int64
	// A listening input's defences (syslog): connections that had sent
	// nothing closed to make room for a new one, or at their first-byte
	// deadline; TLS handshakes refused for the client certificate (mutual
	// TLS: none given, or one that does not verify); messages dropped as
	// not well-formed (strict); datagrams the kernel dropped because the
	// socket's receive buffer was full.
	ConnectionsEvicted   int64
	ConnectionsTimedOut  int64
	AuthFailedNoCert     int64
	AuthFailedBadCert    int64
	DroppedMalformed     int64
	DroppedReceiveBuffer int64
}

// Count is one reason's count.
type Count struct {
	Reason string
	N      int64
}

// Config is an input type's configuration, decoded from the `input`
// section of agent.yaml into the value returned by Factory.NewDefaultConfig.
// The keys every input shares, `type` and `id`, are the registry's: they
// never reach the config (the id arrives in Settings).
type Config interface {
	// Validate reports every problem at once (errors.Join), each a
	// *FieldError naming the key relative to the `input` section.
	Validate() error
}

// Settings is what every input gets beside its config.
type Settings struct {
	// ID is the input id (WAL source id): input.id, or the one the agent
	// keeps in its identity file.
	ID string
	// Logger is the input's logger. The agent's already names the input
	// ("input_id"), so inputs add no id of their own: every line would
	// carry it twice.
	Logger *slog.Logger
	// AgentID and Host are the agent's id and the machine's host name,
	// for inputs that tag their events with them (the file input's
	// add-host-fields).
	AgentID, Host string
	// Claims, when set, is shared by every input of the agent: an input
	// that can find sources several inputs match asks it who reads them.
	Claims *Claims
	// Now, when set, is the wall clock the input stamps its events with
	// (their "_ts"); nil is time.Now.
	Now func() time.Time
}

// Factory creates inputs of one type.
type Factory interface {
	Type() string
	// NewDefaultConfig returns a pointer to a config struct holding every
	// default; agent.yaml is decoded on top of it.
	NewDefaultConfig() Config
	Create(cfg Config, set Settings) (Input, error)
}

// FieldError is a config problem tied to one key, e.g. "multiline.max-lines".
type FieldError struct {
	Key string
	Err error
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// FieldKey is the key relative to the `input` section; the agent's config
// layer adds the section and the key's line:column.
func (e *FieldError) FieldKey() string { return e.Key }

// Errorf builds a *FieldError.
func Errorf(key, format string, args ...any) error {
	return &FieldError{Key: key, Err: fmt.Errorf(format, args...)}
}

// ErrUnknownType is returned by Registry.Get for an unregistered type.
var ErrUnknownType = errors.New("unknown input type")

// Registry maps input.type values to factories. Build it in main; there is
// no package-level registry.
type Registry = component.Registry[Factory]

// NewRegistry returns a registry holding the given factories; Get wraps
// ErrUnknownType.
func NewRegistry(factories ...Factory) *Registry {
	return component.NewRegistry(ErrUnknownType, factories...)
}

// Overlap is a source that two inputs' configs both name.
type Overlap struct {
	// Key is where the receiving config names it, relative to its
	// section ("paths[1]").
	Key string
	// Source is what both read (a path or glob, as configured).
	Source string
}

// Overlapper is implemented by configs that can tell from the configs
// alone that another config of the same type reads some of the same
// sources (the agent warns at load: the first input reads them).
type Overlapper interface {
	Overlaps(other Config) []Overlap
}

// Sourcer is implemented by configs that can say where they read (the
// file input: its globs), for the agent's description to a fleet manager.
// Nothing it returns may be a secret.
type Sourcer interface {
	Sources() []string
}

// Adviser is implemented by configs that can tell a setting that works
// but is likely a mistake (a syslog listener other hosts reach without
// TLS); each FieldError's Key is relative to the input's section.
type Adviser = component.Adviser[FieldError]

// RedactedValue replaces secrets in Redacted copies (the same placeholder
// the agent uses for its other secrets).
const RedactedValue = "<redacted>"

// Redacter is implemented by configs that hold secrets (a relay's
// tokens): Redacted returns a copy with each secret replaced by
// RedactedValue, safe to log, show in status or report to a fleet
// manager. Empty stays empty, so "not set" is still visible.
type Redacter interface {
	Redacted() Config
}

// PathAnchor is implemented by configs that name files (see
// component.PathAnchor).
type PathAnchor = component.PathAnchor
