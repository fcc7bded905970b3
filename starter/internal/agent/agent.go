package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/starter/internal/clockjump"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/tap"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport/client"
)

// Log attribute keys used in several places.
const (
	keyError = "error"
)

// IDs are the agent's identities as the identity file holds them. Input
// is the id an input with OptionalID and no id of its own takes when the
// WAL records none (see Settle).
type IDs struct {
	Agent, Input, Output string
}

// Options configure New: the typed options of each component the agent
// runs, as the config layer decoded and checked them, and what the process
// provides (install root, ids, logger, clock). The agent reads no config
// file and knows no YAML key.
type Options struct {
	Agent Settings
	Queue QueueSettings
	Retry RetrySettings
	// WAL is the queue's store (not opened with DeliveryNon); a relative
	// Path resolves against Home.
	WAL wal.Options

	// InputList are the inputs, in config order (the single `input:`
	// form is a one-entry list); Settle decides their ids at start.
	InputList []InputSpec
	Inputs    *input.Registry
	// OutputType picks the factory in Outputs, which gets Output
	// (required).
	OutputType string
	Output     output.Config
	Outputs    *output.Registry
	// RateLimit is output.rate-limit: the agent's cap on what it sends,
	// shared by all it sends through.
	RateLimit output.RateLimit

	// Home is the install root.
	Home string
	IDs  IDs
	// Host is the host name inputs may tag events with; "" means
	// os.Hostname.
	Host string
	// Logger defaults to a discard handler.
	Logger *slog.Logger
	// OnReady is called once, after the readiness log line.
	OnReady func()
	// ConfigHash names the config these options came from (config.Config
	// Hash); Snapshot shows the one in force.
	ConfigHash string
	// Now defaults to time.Now.
	Now func() time.Time
	// Clock is the wall and boot clock whose jumps repair the times of
	// rows stamped before them (clockjump). nil: the system's, unless
	// Now is set (a fake wall clock has no monotonic partner): then no
	// time is repaired.
	Clock clockjump.Clock
	// MemoryLimit is the soft memory limit the process set for the agent
	// (process.TuneMemoryLimit), 0 when the environment's GOMEMLIMIT
	// decided. The loop raises it while a slow disk's commit group holds
	// more than queue.group-max-bytes (memoryLimit); read at start only.
	MemoryLimit int64
}

// Agent runs one agent: input → queue → sender. Create it with New and
// call Run once.
type Agent struct {
	// opts belongs to the loop goroutine once Run started (a reload
	// replaces it); other goroutines read published copies.
	opts Options
	log  *slog.Logger
	now  func() time.Time
	host string // Options.Host, or os.Hostname
	// claims is shared by the inputs: a file several match is read by
	// the first (the loop keeps its order in step with the inputs).
	claims *input.Claims
	// delivery is opts.Agent.Delivery, which no reload changes, for
	// Snapshot.
	delivery string

	ctr counters
	pub published
	// rate is the send-rate cap in force; a reload retunes it in place.
	rate *sendCap
	ext  atomic.Pointer[extStats]

	// tap publishes events to `edge-agent tap` (Tap); closed when Run
	// returns.
	tap *tap.Hub

	ran atomic.Bool
	// reloads hands Reload's requests to the loop, which owns what a
	// reload replaces; loopDone is closed once the loop stopped turning.
	reloads  chan *reloadRequest
	loopDone chan struct{}

	// wal is the WAL while the loop has it open (WAL); admin carries
	// UpdateWAL's requests to the loop; stopped is closed when Run returns.
	wal     atomic.Pointer[wal.WAL]
	admin   chan *adminReq
	stopped chan struct{}

	// wrapQueue, set by tests only, wraps the queue once it is open (to
	// inject storage failures such as a full disk).
	wrapQueue func(queue) queue
}

// extStats are optional statistics of the input and the transport, read by
// Snapshot from any goroutine; the providers must be safe for that.
type extStats struct {
	inputs []*source
	link   func() client.Stats // the transport's own counters, when it keeps them
	// endpoints reports each endpoint of output.endpoints, when the
	// output has several.
	endpoints func() []output.EndpointStatus
	// output is what the sender describes of itself, when it does.
	output func() component.Description
}

// New checks the options; it opens nothing (Run does).
func New(opts Options) (*Agent, error) {
	switch {
	case opts.Inputs == nil:
		return nil, errors.New("new agent: no input registry")
	case opts.Outputs == nil:
		return nil, errors.New("new agent: no output registry")
	case opts.Output == nil:
		// The scheduler sizes its jobs and pauses from them.
		return nil, fmt.Errorf("new agent: output %q has no options: %w", opts.OutputType, check.ErrInvalid)
	}
	if err := CheckInputs(opts.InputList); err != nil {
		return nil, fmt.Errorf("new agent: %w: %w", check.ErrInvalid, err)
	}
	host := opts.Host
	if host == "" {
		// Only inputs with add-host-fields use it; they refuse to start
		// without one, so a failure here is theirs to report.
		host, _ = os.Hostname()
	}
	// The settings' own checks, which config check ran already: options
	// built in code (tests, tools) must not reach the loop unchecked.
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("new agent: %w: %w", check.ErrInvalid, err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil && opts.Now == nil {
		opts.Clock = clockjump.System()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Agent{opts: opts, log: opts.Logger, now: opts.Now, host: host, claims: input.NewClaims(nil), delivery: opts.Agent.Delivery.String(),
		rate:    newSendCap(opts.RateLimit, opts.Now()),
		reloads: make(chan *reloadRequest), loopDone: make(chan struct{}),
		admin: make(chan *adminReq), stopped: make(chan struct{}), tap: tap.NewHub(opts.Now)}
	r.pub.state = "starting"
	r.ctr.fsync.bounds = fsyncBuckets[:]
	types := make([]string, len(opts.InputList))
	for i, sp := range opts.InputList {
		types[i] = sp.Type
	}
	r.pub.inputType, r.pub.outputType, r.pub.configHash = joinTypes(types), opts.OutputType, opts.ConfigHash
	r.pub.connection = "idle"
	r.pub.ids = resolvedIDs{agent: opts.IDs.Agent, input: opts.IDs.Input, output: opts.IDs.Output}
	return r, nil
}

// validate runs the settings' own checks, which config check ran already:
// options built in code (tests, tools) must not reach the loop unchecked.
func (o *Options) validate() error {
	return errors.Join(o.Agent.Validate(), o.Queue.Validate(), o.Retry.Validate(), underKey("output.rate-limit", o.RateLimit.Validate()))
}

// underKey prefixes the keys of a component's problems with its section.
func underKey(section string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", section, err)
}

// Run starts the agent and blocks until ctx is done (graceful stop, nil
// error) or a fatal error (AUTH_FAILED or DECRYPT_FAILED under
// output.on-refusal: exit, an input failing with on-error: fail, a start-up
// failure). See doc.go for the shutdown.
func (r *Agent) Run(ctx context.Context) error {
	if !r.ran.CompareAndSwap(false, true) {
		return errors.New("run edge agent: Run called twice")
	}
	defer close(r.stopped)
	defer r.tap.Close()
	l, err := r.start(ctx)
	if err != nil {
		r.pub.set(func(p *published) { p.state = "stopped" })
		close(r.loopDone)
		if ctx.Err() != nil {
			// Asked to stop while starting (SIGTERM during a slow input
			// Open): what was opened is released, and that is a clean stop.
			r.log.Info("Shutdown signal received; stopping edge agent.", slog.String("during", "start-up"))
			return nil
		}
		r.pub.setError(err, r.now())
		return err
	}
	// The sender's context is not ctx: in-flight sends may finish while the
	// loop flushes at shutdown; shutdown cancels it explicitly.
	l.send.base = context.WithoutCancel(ctx)
	l.startSender()
	stopSummary := r.startSummary()
	if l.walq != nil {
		r.wal.Store(l.walq.w)
	}
	r.ready(l)

	cause := l.run(ctx)
	close(r.loopDone) // Reload calls from now on find no loop
	// The shutdown logs its own totals; a periodic line in the middle of
	// it would only repeat part of them.
	stopSummary()
	return r.shutdown(l, cause)
}

// run turns the loop until ctx is done or a fatal error.
func (l *loop) run(ctx context.Context) error {
	for ctx.Err() == nil {
		l.r.ctr.lastTurn.Store(l.r.now().UnixNano())
		if req := l.reloads.take(l.r.reloads); req != nil {
			req.done <- l.applyReload(ctx, req.opts, req.replace)
		}
		progressed, err := l.turn(ctx)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil
			}
			return err
		}
		if !progressed {
			l.wait(ctx)
		}
	}
	return nil
}

func (r *Agent) ready(l *loop) {
	now := r.now()
	r.pub.set(func(p *published) { p.state, p.startedAt = "running", now })
	ids := r.Snapshot()
	// ids.InputType lists the inputs' types, each once, in config order.
	inputType := ids.InputType
	if strings.Contains(inputType, ",") {
		inputType = mixedInputTypes
	}
	r.log.Info("BOOTSTRAP_READY edge-agent started",
		slog.String("agent_id", ids.AgentID),
		slog.String("input_id", ids.InputID),
		slog.String("output_id", ids.OutputID),
		slog.String("input_type", inputType),
		slog.String("input_types", ids.InputType),
		slog.String("output_type", r.opts.OutputType),
		slog.String("delivery_guarantee", r.opts.Agent.Delivery.String()))
	if r.opts.OnReady != nil {
		r.opts.OnReady()
	}
}
