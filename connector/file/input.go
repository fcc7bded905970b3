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

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/file/internal/glob"
	"github.com/edge-agent/edge-agent/connector/file/internal/multiline"
	"github.com/edge-agent/edge-agent/connector/input"
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
type Input struct {
	cfg      Config
	log      *slog.Logger
	id       string
	now      func() time.Time               // injectable clock for tests
	openFile func(string) (*os.File, error) // injectable for error tests
	fsys     glob.FS                        // listing and stat; injectable for error tests
	pats     []*glob.Pattern
	excludes []*glob.Pattern
	ml       *multiline.Config
	fmt      formatter
	// filter is include-lines/exclude-lines; nil when neither is set.
	filter *lineFilter
	// extra is appended to every event object after its payload (fields,
	// add-host-fields); nil when neither is set.
	extra []byte
	// claims says which input reads a file several match; unclaim
	// removes this input's matcher from it at Close.
	claims      *input.Claims
	unclaim     func()
	claimLogged map[string]struct{} // paths logged as read by another input

	scanEvery, closeAfter, flushIdle time.Duration
	failFast                         bool

	files  map[string]*tracked // by Key
	byID   map[fileID]*tracked
	byPath map[string]*tracked // live files by path, chained by samePath
	// byFP and byPrior index files by their fingerprint and by the
	// fingerprint of their content before a truncation: a new file is
	// looked up in both to tell a copy (copytruncate) from a new file.
	byFP    map[fingerprint.Sum][]*tracked
	byPrior map[fingerprint.Sum][]*prior
	fpLens  map[int]int // entries of byFP and byPrior by fingerprint length
	priorQ  []*prior    // the priors in byPrior, oldest first
	// staleByDir lists by directory the files whose short fingerprint
	// they outgrew since their last read (copies.go).
	staleByDir map[string][]*tracked
	ring       []*tracked // read order; files found earlier come first
	cursor     int        // where the next poll's round-robin starts
	tick       uint64
	openFiles  []*tracked // files holding a descriptor (≤ max-open-files)
	scanGen    uint64

	saved     map[fileID][]savedState // positions from Open not yet matched
	savedKeys map[string]struct{}     // the keys in saved
	// savedBySum and savedLens index the saved positions by fingerprint,
	// for copies of files truncated or gone while the agent was stopped
	// (entries whose position was matched since are skipped on lookup).
	savedBySum map[fingerprint.Sum][]fileID
	// savedByPrior indexes them by their "prev": the content a file held
	// before a truncation, which its copy continues even when the copy
	// is discovered before the truncated file is.
	savedByPrior map[fingerprint.Sum][]fileID
	savedLens    map[int]struct{}
	savedScans   int
	// knownPats are the patterns the saved positions were taken under
	// (patternsKey); nil when every pattern counts as known.
	knownPats map[string]struct{}
	firstScan bool
	lastScan  time.Time
	rescan    bool

	pending []input.Event // events that did not fit the last poll
	out     []input.Event // the poll's output while it runs
	owed    owedPos       // the position the last line event still lacks
	budget  int
	// byteBudget is what the running poll may still read (maxPollBytes).
	byteBudget int

	readBuf []byte
	// lineBytes is the mean line length read lately (learnLineBytes),
	// which sizes reads; 0 until a read yielded a line.
	lineBytes int
	fpBuf     []byte
	scratch   []byte
	tsTail    []byte // `,"_ts":<ms>,"payload":` for the current read time
	tsCached  int64
	arena     arena
	errSeen   map[string]string // path → last logged error, to log once
	// filesList is what Files returns, copied by publishFiles at filesAt.
	filesList atomic.Pointer[[]input.FileStatus]
	filesAt   time.Time
	listErrs  map[string]struct{} // directories in a listing failure streak
	deepSeen  map[string]struct{} // directories logged as too deep to walk

	watch *watcher
	wake  <-chan struct{} // the watcher's wake channel; kept after Close
	stats counters
	local localCounts

	opened, closed bool
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
		cfg:          *cfg,
		log:          log,
		id:           set.ID,
		now:          time.Now,
		openFile:     openShared,
		fsys:         glob.OS{},
		scanEvery:    cfg.GlobScanInterval,
		closeAfter:   cfg.CloseInactive,
		flushIdle:    cfg.Multiline.FlushIdleTimeout,
		failFast:     strings.EqualFold(cfg.OnError, "fail"),
		files:        make(map[string]*tracked),
		byID:         make(map[fileID]*tracked),
		byPath:       make(map[string]*tracked),
		byFP:         make(map[fingerprint.Sum][]*tracked),
		byPrior:      make(map[fingerprint.Sum][]*prior),
		fpLens:       make(map[int]int),
		staleByDir:   make(map[string][]*tracked),
		saved:        make(map[fileID][]savedState),
		savedKeys:    make(map[string]struct{}),
		savedBySum:   make(map[fingerprint.Sum][]fileID),
		savedByPrior: make(map[fingerprint.Sum][]fileID),
		savedLens:    make(map[int]struct{}),
		errSeen:      make(map[string]string),
		listErrs:     make(map[string]struct{}),
		deepSeen:     make(map[string]struct{}),
		readBuf:      make([]byte, readChunk),
		fpBuf:        make([]byte, cfg.FingerprintBytes),
	}
	if limit := openFilesLimit(); limit > 0 {
		if n, lowered := clampOpenFiles(in.cfg.MaxOpenFiles, limit); lowered {
			in.log.Warn("max-open-files lowered to fit the process's open-files limit",
				"configured", in.cfg.MaxOpenFiles, "effective", n, "limit", limit, "reserved", fdReserve)
			in.cfg.MaxOpenFiles = n
		}
	}
	in.fmt = formatter{codec: c, dec: newDecoder(c), jsonOut: strings.EqualFold(cfg.OutputFormat.Type, "json")}
	for _, p := range cfg.Paths {
		pat, err := glob.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("file input paths: %w", err)
		}
		in.pats = append(in.pats, pat)
	}
	for _, p := range cfg.Exclude {
		pat, err := glob.CompileExclude(p)
		if err != nil {
			return nil, fmt.Errorf("file input exclude: %w", err)
		}
		in.excludes = append(in.excludes, pat)
	}
	if cfg.Multiline.Pattern != "" {
		re, err := regexp.Compile(cfg.Multiline.Pattern)
		if err != nil {
			return nil, fmt.Errorf("file input multiline.pattern: %w", err)
		}
		mode := multiline.After
		if strings.EqualFold(cfg.Multiline.Match, "before") {
			mode = multiline.Before
		}
		in.ml = &multiline.Config{Pattern: re, Mode: mode, Negate: cfg.Multiline.Negate, MaxLines: cfg.Multiline.MaxLines}
	}
	in.filter, _ = compileLineFilter(cfg.IncludeLines, cfg.ExcludeLines) // Validate checked them
	if cfg.AddHostFields && set.Host == "" {
		return nil, fmt.Errorf("file input: %w", ErrNoHost)
	}
	in.extra = extraFields(cfg.Fields, cfg.AddHostFields, set.Host, set.AgentID)
	in.claims, in.claimLogged = set.Claims, make(map[string]struct{})
	in.unclaim = set.Claims.Register(set.ID, in.matches)
	return in, nil
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
	if !opts.FirstStart {
		// Positions saved before the patterns were recorded: every
		// pattern counts as known, as it did then.
		in.knownPats = nil
	} else {
		in.knownPats = map[string]struct{}{}
	}
	for key, raw := range opts.Saved {
		if raw == nil {
			continue
		}
		if key == patternsKey {
			set, err := decodePatterns(raw)
			if err != nil {
				in.log.Warn("dropping unreadable record of the path patterns; every pattern counts as known", "key", key, "error", err)
				continue
			}
			in.knownPats = set
			continue
		}
		s, err := decodeState(key, raw)
		if err != nil {
			// An unreadable position is dropped rather than fatal: the
			// file is then read from 0 (duplicates, never loss).
			in.log.Warn("dropping unreadable file position", "key", key, "error", err)
			in.pending = append(in.pending, input.Event{Pos: input.Position{Key: key}})
			continue
		}
		id := s.id()
		in.saved[id] = append(in.saved[id], s)
		in.savedKeys[key] = struct{}{}
		if s.sum.Len > 0 {
			in.savedBySum[s.sum] = append(in.savedBySum[s.sum], id)
			in.savedLens[s.sum.Len] = struct{}{}
		}
		if p := s.prior; p != nil && p.sum.Len > 0 {
			in.savedByPrior[p.sum] = append(in.savedByPrior[p.sum], id)
			in.savedLens[p.sum.Len] = struct{}{}
		}
	}
	if in.cfg.UseFsnotify {
		w, err := newWatcher(in.log)
		if err != nil {
			in.log.Warn("fsnotify unavailable; relying on polling", "error", err)
		} else {
			in.watch = w
			in.wake = w.wake
		}
	}
	in.firstScan = true
	in.budget = math.MaxInt
	in.out = in.pending[:0:0]
	err := in.scan(ctx, in.now())
	in.settle()
	in.pending = append(in.pending, in.out...)
	in.out, in.budget = nil, 0
	in.firstScan = false
	if err != nil {
		_ = in.Close()
		return err
	}
	in.recordPatterns()
	in.publish()
	return ctx.Err()
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
	in.out, in.budget = dst, max
	defer func() { in.settle(); in.out = nil; in.publish() }()

	in.drainPending()
	if in.budget == 0 {
		return in.out, nil
	}
	now := in.now()
	in.takeWatchEvents()
	if in.rescan || now.Sub(in.lastScan) >= in.scanEvery {
		if err := in.scan(ctx, now); err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return in.out, nil // shutting down, as above
			}
			return in.out, err
		}
	}
	in.housekeep(now)
	if err := in.readAll(now); err != nil {
		return in.out, err
	}
	return in.out, nil
}

// Drain appends every buffered multiline group (and any position update
// still queued) to dst, regardless of any poll budget; for shutdown.
func (in *Input) Drain(dst []input.Event) []input.Event {
	if !in.opened || in.closed {
		return dst
	}
	in.out, in.budget = dst, math.MaxInt
	in.drainPending()
	for _, t := range in.ring {
		in.flushGroups(t, true)
	}
	in.settle()
	out := in.out
	in.out, in.budget = nil, 0
	in.publish()
	return out
}

// Close releases every file and stops the watcher. Idempotent.
func (in *Input) Close() error {
	if in.closed {
		return nil
	}
	in.closed = true
	in.unclaim()
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
	if in.watch != nil {
		errs = append(errs, in.watch.close())
		in.watch = nil
	}
	in.publish()
	return errors.Join(errs...)
}

// Wakeup returns a channel that receives when the watcher saw file
// activity, so a scheduler may poll before its idle sleep ends. It is nil
// (never ready) without fsnotify. Call it after Open; the channel may be
// used from any goroutine and is never closed.
func (in *Input) Wakeup() <-chan struct{} { return in.wake }

var _ io.Closer = (*Input)(nil)
