package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/glob"
	"github.com/edge-agent/edge-agent/connector/file/internal/tracker"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/linefilter"
	"github.com/edge-agent/edge-agent/connector/internal/multiline"
)

// Errors returned by the file input.
var (
	// ErrClosed is returned by Open and Poll after Close.
	ErrClosed = errors.New("file input closed")
	// ErrNotOpen is returned by Poll before Open.
	ErrNotOpen = errors.New("file input not open")
)

// readChunk is the size of one read. Big enough to amortise the syscall
// over hundreds of lines, small enough to stay in L2 cache.
const readChunk = 64 << 10

// Input is the file input: it discovers files by glob, follows them
// through rotation and truncation, and turns their lines into events.
// Like every input.Input it is driven by one goroutine; Stats and Wakeup
// are the only methods safe to call concurrently.
//
// Input itself schedules: when to scan, the round-robin of the reads
// within a poll's budget, the time-driven closes and flushes; and it
// answers for the claims it registered and the stats. Its state is cut
// along its parts, each a type of its own: rules (what New compiled from
// the config for reading), manager (the globs, the scan's schedule,
// claims, watcher), files (the tracker: every index by which a file is
// found), readers (the read loop's buffers), emitter (the poll's events
// and positions), report (logging, on-error, counters, Files, Stats) and
// set (what a file found, renamed, truncated or copied is). Each file's
// own reading is its reader.
type Input struct {
	cfg Config
	id  string
	*system
	*readOrder

	rules
	mg manager
	// files knows every file of the input by key, identity, path and
	// fingerprint, with the positions restored by Open.
	files *files
	rd    readers
	em    emitter
	rep   report
	set   *fileSet

	opened, closed bool
}

// system is what the input asks of the operating system; tests replace
// any of it after New.
type system struct {
	now      func() time.Time
	openFile func(string) (*os.File, error)
	fsys     glob.FS // listing and stat
}

// readOrder is the files in the order they are read, and those of them
// holding a descriptor.
type readOrder struct {
	// ring is the read order: files found earlier come first; cursor is
	// where the next poll's round-robin starts.
	ring   []*tracked
	cursor int
	// openFiles are the files holding a descriptor (≤ max-open-files).
	openFiles []*tracked
}

// rules is what New compiled from the config; read-only after New.
type rules struct {
	ml  *multiline.Config
	fmt formatter
	// filter is include-lines/exclude-lines; nil when neither is set.
	filter *linefilter.Filter
	// extra is appended to every event object after its payload (fields,
	// add-host-fields); nil when neither is set.
	extra []byte

	scanEvery, closeAfter, flushIdle time.Duration
}

// readers is the read loop's buffers and what sizes its reads.
type readers struct {
	tick    uint64
	readBuf []byte
	// lineBytes is the mean line length read lately (learnLineBytes),
	// which sizes reads; 0 until a read yielded a line.
	lineBytes int
	fpBuf     []byte
	// byteBudget is what the running poll may still read (maxPollBytes).
	byteBudget int
}

// emitter is the output of the running poll and what did not fit it.
type emitter struct {
	// files is the input's tracker (a position's state carries the
	// file's prior) and rules what New compiled: both the Input's.
	files    *files
	rules    *rules
	pending  []input.Event // events that did not fit the last poll
	out      []input.Event // the poll's output while it runs
	owed     owedPos       // the position the last line event still lacks
	budget   int
	scratch  []byte
	tsTail   []byte // `,"_ts":<ms>,"payload":` for the current read time
	tsCached int64
	arena    arena
	local    *localCounts // the report's, counted during the poll
}

// report is what the input tells its operator: errors logged once per
// file, the Files list and the Stats counters.
type report struct {
	log *slog.Logger
	// failFast is on-error: fail.
	failFast bool
	errSeen  map[string]string   // path → last logged error, to log once
	listErrs map[string]struct{} // directories in a listing failure streak
	deepSeen map[string]struct{} // directories logged as too deep to walk
	// local is counted during a poll, then published to stats.
	local localCounts
	// filesList is what Files returns, copied by publishFiles at filesAt.
	filesList atomic.Pointer[[]input.FileStatus]
	filesAt   time.Time
	stats     counters
}

var (
	_ input.Input         = (*Input)(nil)
	_ input.Waker         = (*Input)(nil)
	_ input.StatsReporter = (*Input)(nil)
)

// New creates a file input from a validated config. Relative paths are
// resolved against the working directory.
func New(cfg *Config, set input.Settings) (*Input, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("file input config: %w", err)
	}
	c, err := resolveEncoding(cfg.Encoding)
	if err != nil {
		return nil, err
	}
	log := set.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := &Input{
		cfg:       *cfg,
		id:        set.ID,
		system:    &system{now: time.Now, openFile: openShared, fsys: glob.OS{}},
		readOrder: &readOrder{},
		rules: rules{
			scanEvery:  cfg.GlobScanInterval,
			closeAfter: cfg.CloseInactive,
			flushIdle:  cfg.Multiline.FlushIdleTimeout,
		},
		mg:    newManager(),
		files: tracker.New[*tracked, fileID](),
		rd:    readers{readBuf: make([]byte, readChunk), fpBuf: make([]byte, cfg.FingerprintBytes)},
		rep: report{log: log, failFast: strings.EqualFold(cfg.OnError, "fail"), errSeen: make(map[string]string),
			listErrs: make(map[string]struct{}), deepSeen: make(map[string]struct{})},
	}
	if set.Now != nil {
		in.system.now = set.Now
	}
	if limit := openFilesLimit(); limit > 0 {
		if n, lowered := clampOpenFiles(in.cfg.MaxOpenFiles, limit); lowered {
			in.rep.log.Warn("max-open-files lowered to fit the process's open-files limit",
				"configured", in.cfg.MaxOpenFiles, "effective", n, "limit", limit, "reserved", fdReserve)
			in.cfg.MaxOpenFiles = n
		}
	}
	if err := in.compile(cfg, c); err != nil {
		return nil, err
	}
	in.filter, _ = linefilter.Compile(cfg.IncludeLines, cfg.ExcludeLines) // Validate checked them
	if cfg.AddHostFields && set.Host == "" {
		return nil, fmt.Errorf("file input: %w", ErrNoHost)
	}
	in.extra = extraFields(cfg.Fields, cfg.AddHostFields, set.Host, set.AgentID)
	in.mg.claims = set.Claims
	in.em.files, in.em.rules, in.em.local = in.files, &in.rules, &in.rep.local
	in.set = &fileSet{system: in.system, readOrder: in.readOrder, rules: &in.rules, cfg: &in.cfg, id: in.id,
		mg: &in.mg, files: in.files, rd: &in.rd, em: &in.em, rep: &in.rep}
	in.mg.unclaim = set.Claims.Register(set.ID, in.mg.matches)
	return in, nil
}

// compile builds the patterns, the formatter and the multiline rule.
func (in *Input) compile(cfg *Config, c codec) error {
	in.fmt = formatter{codec: c, dec: newDecoder(c), jsonOut: strings.EqualFold(cfg.OutputFormat.Type, "json")}
	for _, p := range cfg.Paths {
		pat, err := glob.Compile(p)
		if err != nil {
			return fmt.Errorf("file input paths: %w", err)
		}
		in.mg.pats = append(in.mg.pats, pat)
	}
	for _, p := range cfg.Exclude {
		pat, err := glob.CompileExclude(p)
		if err != nil {
			return fmt.Errorf("file input exclude: %w", err)
		}
		in.mg.excludes = append(in.mg.excludes, pat)
	}
	if cfg.Multiline.Pattern != "" {
		re, err := regexp.Compile(cfg.Multiline.Pattern)
		if err != nil {
			return fmt.Errorf("file input multiline.pattern: %w", err)
		}
		mode := multiline.After
		if strings.EqualFold(cfg.Multiline.Match, "before") {
			mode = multiline.Before
		}
		in.ml = &multiline.Config{Pattern: re, Mode: mode, Negate: cfg.Multiline.Negate, MaxLines: cfg.Multiline.MaxLines}
	}
	return nil
}

// Open restores saved positions, starts the optional change watcher and
// scans the globs once, so "files present at the first start" means
// files present when Open runs. The scan stops as soon as ctx is done:
// Open then closes the input and returns an error wrapping ctx.Err().
func (in *Input) Open(ctx context.Context, opts input.OpenOptions) error {
	if in.closed {
		return ErrClosed
	}
	if in.opened {
		return errors.New("file input: Open called twice")
	}
	in.opened = true
	in.restore(opts)
	if in.cfg.UseFsnotify {
		w, err := newWatcher(in.rep.log)
		if err != nil {
			in.rep.log.Warn("fsnotify unavailable; relying on polling", "error", err)
		} else {
			in.mg.watch = w
			in.mg.wake = w.wake
		}
	}
	in.mg.firstScan = true
	in.em.budget = math.MaxInt
	in.em.out = in.em.pending[:0:0]
	err := in.set.scan(ctx, in.now())
	in.em.settle()
	in.em.pending = append(in.em.pending, in.em.out...)
	in.em.out, in.em.budget = nil, 0
	in.mg.firstScan = false
	if err != nil {
		_ = in.Close()
		return err
	}
	in.set.recordPatterns()
	in.publish()
	return ctx.Err()
}

// restore takes the positions the last run saved: the patterns they were
// taken under, and each file's, indexed for discovery.
func (in *Input) restore(opts input.OpenOptions) {
	if !opts.FirstStart {
		// Positions saved before the patterns were recorded: every
		// pattern counts as known, as it did then.
		in.mg.knownPats = nil
	} else {
		in.mg.knownPats = map[string]struct{}{}
	}
	for key, raw := range opts.Saved {
		if raw == nil {
			continue
		}
		if key == patternsKey {
			set, err := decodePatterns(raw)
			if err != nil {
				in.rep.log.Warn("dropping unreadable record of the path patterns; every pattern counts as known", "key", key, "error", err)
				continue
			}
			in.mg.knownPats = set
			continue
		}
		s, err := decodeState(key, raw)
		if err != nil {
			// An unreadable position is dropped rather than fatal: the
			// file is then read from 0 (duplicates, never loss).
			in.rep.log.Warn("dropping unreadable file position", "key", key, "error", err)
			in.em.pending = append(in.em.pending, input.Event{Pos: input.Position{Key: key}})
			continue
		}
		in.files.Restore(s.saved())
	}
}

// Poll appends up to max events to dst. It never waits for data.
func (in *Input) Poll(ctx context.Context, dst []input.Event, max int) ([]input.Event, error) {
	switch {
	case in.closed:
		return dst, ErrClosed
	case !in.opened:
		return dst, ErrNotOpen
	case max <= 0:
		return dst, nil
	}
	if ctx.Err() != nil {
		// Shutting down: no new work, and no error (errors are fatal).
		return dst, nil
	}
	in.em.out, in.em.budget = dst, max
	defer func() { in.em.settle(); in.em.out = nil; in.publish() }()

	in.em.drainPending()
	if in.em.budget == 0 {
		return in.em.out, nil
	}
	now := in.now()
	in.mg.takeWatchEvents(in.files)
	if in.mg.rescan || now.Sub(in.mg.lastScan) >= in.scanEvery {
		if err := in.set.scan(ctx, now); err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return in.em.out, nil // shutting down, as above
			}
			return in.em.out, err
		}
	}
	in.housekeep(now)
	if err := in.readAll(now); err != nil {
		return in.em.out, err
	}
	return in.em.out, nil
}

// Drain appends every buffered multiline group (and any position update
// still queued) to dst, regardless of any poll budget; for shutdown.
func (in *Input) Drain(dst []input.Event) []input.Event {
	if !in.opened || in.closed {
		return dst
	}
	in.em.out, in.em.budget = dst, math.MaxInt
	in.em.drainPending()
	for _, t := range in.ring {
		in.em.flushGroups(t, true)
	}
	in.em.settle()
	out := in.em.out
	in.em.out, in.em.budget = nil, 0
	in.publish()
	return out
}

// Close releases every file and stops the watcher. Idempotent.
func (in *Input) Close() error {
	if in.closed {
		return nil
	}
	in.closed = true
	in.mg.unclaim()
	var errs []error
	for _, t := range in.ring {
		if t.f != nil {
			if err := t.f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s: %w", t.path, err))
			}
			t.f = nil
		}
	}
	clear(in.openFiles)
	in.openFiles = in.openFiles[:0]
	if in.mg.watch != nil {
		errs = append(errs, in.mg.watch.close())
		in.mg.watch = nil
	}
	in.publish()
	return errors.Join(errs...)
}

// Wakeup returns a channel that receives when the watcher saw file
// activity, so a scheduler may poll before its idle sleep ends. It is nil
// (never ready) without fsnotify. Call it after Open; the channel may be
// used from any goroutine and is never closed.
func (in *Input) Wakeup() <-chan struct{} { return in.mg.wake }

var _ io.Closer = (*Input)(nil)
