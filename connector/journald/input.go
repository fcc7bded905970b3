package journald

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/linefilter"
	"github.com/edge-agent/edge-agent/connector/internal/multiline"
	"github.com/edge-agent/edge-agent/transport/backoff"
)

// posKey is the one Position.Key of the input: it reads one journal.
const posKey = "journal"

// state is the saved position (input.Position.State, JSON).
type state struct {
	// Cursor is the last entry delivered (in the WAL); "" before any.
	Cursor string `json:"cursor,omitempty"`
	// Realtime is that entry's __REALTIME_TIMESTAMP (µs), to say how
	// much was lost when the journal rotated it away. Without a cursor
	// it is when tailing started: a restart reads from that time, so the
	// entries written while the agent was stopped are not skipped.
	Realtime int64 `json:"realtime_us,omitempty"`
}

// Input reads the journal through journalctl. Like every input.Input it is
// driven by one goroutine; Stats, Cursor and Wakeup are safe to call
// concurrently.
type Input struct {
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	filter *linefilter.Filter
	ml     *multiline.Config
	asm    *multiline.Assembler
	fol    *follower
	q      *queue
	fmt    formatter
	c      counters

	// pending are the entries in the assembler, oldest first.
	pending []*entry
	// done is the position of the last entry handed to the scheduler;
	// anchor the tailing start time when there is no cursor yet.
	done      state
	anchor    int64
	anchorOut bool // the anchor position was emitted
	// lastFiltered: the last group handled was dropped by the filters.
	lastFiltered bool

	events, filtered atomic.Int64
	cursor           atomic.Pointer[string]

	cancel context.CancelFunc
	wg     sync.WaitGroup
	opened bool
	closed bool
}

var (
	_ input.Input         = (*Input)(nil)
	_ input.Waker         = (*Input)(nil)
	_ input.StatsReporter = (*Input)(nil)
)

// New validates cfg and returns an input; Open starts journalctl.
func New(cfg *Config, set input.Settings) (*Input, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("journald input: %w", err)
	}
	bin, err := cfg.journalctl()
	if err != nil {
		return nil, fmt.Errorf("journald input: %w", err)
	}
	log := set.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := &Input{cfg: *cfg, log: log, now: time.Now}
	in.filter, _ = linefilter.Compile(cfg.IncludeLines, cfg.ExcludeLines) // Validate checked them
	if in.ml, err = cfg.Multiline.Compile(); err != nil {
		return nil, fmt.Errorf("journald input: multiline.pattern: %w", err)
	}
	if in.ml != nil {
		in.asm = multiline.New(*in.ml)
	}
	in.q = newQueue(queueMaxEntries, queueMaxBytes)
	in.fol = &follower{
		bin: bin, src: sourceArgs(cfg), filters: filterArgs(cfg),
		sel: newSelector(cfg.IncludeFields, cfg.ExcludeFields), limit: cfg.MaxMessageBytes,
		log: log, q: in.q, hang: cfg.HangTimeout, c: &in.c,
		pol: backoff.Policy{Initial: cfg.RestartBackoff, Max: cfg.RestartBackoffMax},
	}
	return in, nil
}

// sourceArgs are journalctl's arguments naming the journal read.
func sourceArgs(c *Config) []string {
	var out []string
	if c.Directory != "" {
		out = append(out, "--directory="+c.Directory)
	}
	for _, f := range c.Files {
		out = append(out, "--file="+f)
	}
	return out
}

// filterArgs are journalctl's arguments choosing the entries read.
func filterArgs(c *Config) []string {
	var out []string
	for _, u := range c.Units {
		out = append(out, "--unit="+u)
	}
	for _, u := range c.UserUnits {
		out = append(out, "--user-unit="+u)
	}
	if p, _ := priorityLevel(c.Priority); p >= 0 {
		out = append(out, "--priority="+strconv.Itoa(p))
	}
	if len(c.IncludeFields) > 0 {
		// journalctl then prints only these (and the __ address fields
		// and _BOOT_ID, which it always prints): less to write and parse.
		out = append(out, "--output-fields="+strings.Join(append([]string{"MESSAGE"}, c.IncludeFields...), ","))
	}
	return append(out, c.Matches...)
}

// Open starts reading: after the saved cursor, or on a first start from
// since, the oldest entry (read-from-beginning) or the end.
func (in *Input) Open(_ context.Context, opts input.OpenOptions) error {
	if in.opened {
		return errors.New("journald input: already open")
	}
	var st state
	if raw, ok := opts.Saved[posKey]; ok && len(raw) > 0 {
		if err := json.Unmarshal(raw, &st); err != nil {
			in.log.Warn("the saved journal position cannot be read; starting as on a first start", "error", err)
			st = state{}
		}
	}
	f := in.fol
	switch {
	case st.Cursor != "":
		f.cursor, f.savedRealtime = st.Cursor, st.Realtime
		in.done = st
		in.cursor.Store(&in.done.Cursor)
	case st.Realtime > 0: // tailing had started, nothing read yet
		f.mode, f.since = fromSince, sinceArg(st.Realtime)
		in.done, in.anchorOut = st, true
	case in.cfg.Since != "":
		f.mode, f.since = fromSince, in.cfg.Since
	case in.cfg.ReadFromBeginning:
		f.mode = fromHead
	default:
		// From now: entries from this time on, so that what is written
		// while journalctl starts is not missed, and a restart before the
		// first entry starts from the same time (the anchor, saved).
		in.anchor = in.now().UnixMicro()
		f.mode, f.since = fromSince, sinceArg(in.anchor)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	in.opened = true
	in.wg.Go(func() { f.run(ctx) })
	return nil
}

// Poll appends up to max events; it never waits for journalctl.
func (in *Input) Poll(_ context.Context, dst []input.Event, max int) ([]input.Event, error) {
	if !in.opened || in.closed || max <= 0 {
		return dst, nil
	}
	base := len(dst)
	moved := false
	for len(dst)-base < max {
		if in.asm != nil {
			if g := in.asm.Ready(); g != nil {
				dst, moved = in.emitGroup(dst, len(g)), true
				in.asm.Done()
				continue
			}
		}
		e := in.q.pop()
		if e == nil {
			break
		}
		if in.asm == nil {
			in.pending = append(in.pending[:0], e)
			dst, moved = in.emitGroup(dst, 1), true
			continue
		}
		in.pending = append(in.pending, e)
		in.asm.Add(multiline.Line{Text: e.msg, TS: in.now().UnixMilli()})
	}
	if in.asm != nil && in.asm.Pending() && len(dst)-base < max &&
		in.now().UnixMilli()-in.asm.LastAt() >= in.cfg.Multiline.FlushIdleTimeout.Milliseconds() {
		in.asm.Flush()
		for g := in.asm.Ready(); g != nil && len(dst)-base < max; g = in.asm.Ready() {
			dst, moved = in.emitGroup(dst, len(g)), true
			in.asm.Done()
		}
	}
	if !moved && in.anchor > 0 && !in.anchorOut {
		// Tailing from the end: save when it started, so a restart
		// before the first entry still reads what came in between.
		in.anchorOut = true
		in.done.Realtime = in.anchor
		moved = true
	}
	if moved {
		dst = in.attachPosition(dst, base)
	}
	return dst, nil
}

// emitGroup emits (or filters out) the n oldest pending entries as one
// event.
func (in *Input) emitGroup(dst []input.Event, n int) []input.Event {
	g := in.pending[:n]
	last := g[n-1]
	if last.cursor != "" {
		in.done = state{Cursor: last.cursor, Realtime: last.realtime}
		in.anchorOut = true // a cursor supersedes the tailing start time
	}
	in.lastFiltered = in.filter != nil && !in.filter.Keep(g[0].msg)
	if in.lastFiltered {
		in.filtered.Add(1)
	} else {
		dst = append(dst, input.Event{Payload: in.fmt.appendGroup(nil, g)})
		in.events.Add(1)
	}
	clear(g)
	in.pending = append(in.pending[:0], in.pending[n:]...)
	return dst
}

// attachPosition puts the position on the last event of this Poll (a
// position-only event when the last group was filtered out).
func (in *Input) attachPosition(dst []input.Event, base int) []input.Event {
	st, _ := json.Marshal(in.done)
	pos := input.Position{Key: posKey, State: st}
	if in.done.Cursor != "" {
		c := in.done.Cursor
		in.cursor.Store(&c)
	}
	if len(dst) > base && !in.lastFiltered {
		dst[len(dst)-1].Pos = pos
		return dst
	}
	return append(dst, input.Event{Pos: pos})
}

// Drain emits the buffered multiline group; called at shutdown.
func (in *Input) Drain(dst []input.Event) []input.Event {
	if !in.opened || in.closed || in.asm == nil || !in.asm.Pending() {
		return dst
	}
	base := len(dst)
	in.asm.Flush()
	for g := in.asm.Ready(); g != nil; g = in.asm.Ready() {
		dst = in.emitGroup(dst, len(g))
		in.asm.Done()
	}
	return in.attachPosition(dst, base)
}

// Close stops journalctl (by its PID) and the reader; idempotent.
func (in *Input) Close() error {
	if in.closed {
		return nil
	}
	in.closed = true
	if in.cancel != nil {
		in.cancel()
		in.fol.kill()
		in.wg.Wait()
	}
	return nil
}

// Wakeup fires when the reader queued entries (signals coalesce: one
// pending at most).
func (in *Input) Wakeup() <-chan struct{} { return in.q.wake }

// Stats are the input's counters: LinesRead are journal entries read,
// Events the events delivered (entries or multiline groups), Restarts
// the journalctl restarts.
func (in *Input) Stats() input.Stats {
	return input.Stats{
		LinesRead:        in.c.entries.Load(),
		BytesRead:        in.c.bytes.Load(),
		Events:           in.events.Load(),
		TruncatedLines:   in.c.truncated.Load(),
		InvalidSequences: in.fmt.invalid.Load(),
		Errors:           in.c.errors.Load(),
		Filtered:         in.filtered.Load(),
		Restarts:         in.c.restarts.Load(),
	}
}

// Cursor is the journal cursor of the last entry handed to the scheduler
// (its position), or "" before any.
func (in *Input) Cursor() string {
	if c := in.cursor.Load(); c != nil {
		return *c
	}
	return ""
}
