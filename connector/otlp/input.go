package otlp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/pushq"
)

// Input is a running otlp input. Open, Poll, Drain, Committed and Close
// are the scheduler's (one goroutine); the HTTP handlers and the gRPC
// service put records into the queue and wait for Committed.
type Input struct {
	cfg   *Config
	log   *slog.Logger
	tls   *tls.Config
	q     *pushq.Queue
	stats stats
	now   func() time.Time
	// slots bounds the exports decoded at once.
	slots chan struct{}

	httpSrv  *http.Server
	grpcSrv  *grpc.Server
	served   sync.WaitGroup
	httpAddr atomic.Pointer[string]
	grpcAddr atomic.Pointer[string]

	closeOnce sync.Once
}

// stats are the input's counters, in one place for status and metrics.
type stats struct {
	// exports received (both transports); stored the ones answered
	// success after a commit; records kept; bytes of request bodies,
	// decompressed.
	exports, stored, records, bytes atomic.Int64
	// rejected records (over max-record-bytes), refused exports
	// (retryable: queue full or stopping), bad requests, commit timeouts.
	rejected, refused, badRequests, commitTimeouts atomic.Int64
	invalid                                        atomic.Int64
}

var (
	_ input.Input         = (*Input)(nil)
	_ input.Acker         = (*Input)(nil)
	_ input.Waker         = (*Input)(nil)
	_ input.StatsReporter = (*Input)(nil)
)

// NewFactory returns the factory for `type: otlp`.
func NewFactory() input.Factory { return input.NewFactory(TypeName, NewDefaultConfig, New) }

// New checks cfg and reads its files; nothing listens until Open.
func New(cfg *Config, set input.Settings) (*Input, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := set.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := &Input{
		cfg: cfg, log: log,
		q:     pushq.New(cfg.MaxPendingBytes),
		now:   time.Now,
		slots: make(chan struct{}, cfg.MaxConcurrentRequests),
	}
	var err error
	if in.tls, err = cfg.TLS.Load(); err != nil {
		return nil, err
	}
	return in, nil
}

// Open starts the listeners.
func (in *Input) Open(ctx context.Context, _ input.OpenOptions) error {
	var lc net.ListenConfig
	var httpLn, grpcLn net.Listener
	var err error
	if in.cfg.HTTPListen != "" {
		if httpLn, err = lc.Listen(ctx, "tcp", in.cfg.HTTPListen); err != nil {
			return fmt.Errorf("otlp input: listen on %s (http-listen): %w", in.cfg.HTTPListen, err)
		}
	}
	if in.cfg.GRPCListen != "" {
		if grpcLn, err = lc.Listen(ctx, "tcp", in.cfg.GRPCListen); err != nil {
			if httpLn != nil {
				httpLn.Close()
			}
			return fmt.Errorf("otlp input: listen on %s (grpc-listen): %w", in.cfg.GRPCListen, err)
		}
	}
	if httpLn != nil {
		addr := httpLn.Addr().String()
		in.httpAddr.Store(&addr)
		if in.tls != nil {
			httpLn = tls.NewListener(httpLn, in.tls)
		}
		mux := http.NewServeMux()
		mux.HandleFunc(logsPath, in.serveHTTP)
		in.httpSrv = &http.Server{
			Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: in.cfg.ReadTimeout,
			WriteTimeout: in.cfg.CommitTimeout + in.cfg.ReadTimeout, IdleTimeout: in.cfg.IdleTimeout,
			MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(in.log.Handler(), slog.LevelDebug),
		}
		in.served.Go(func() {
			if err := in.httpSrv.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				in.log.Error("otlp http listener stopped", slog.Any("error", err))
			}
		})
	}
	if grpcLn != nil {
		addr := grpcLn.Addr().String()
		in.grpcAddr.Store(&addr)
		opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(in.cfg.MaxBodyBytes),
			grpc.MaxConcurrentStreams(uint32(in.cfg.MaxConcurrentRequests))}
		if in.tls != nil {
			opts = append(opts, grpc.Creds(credentials.NewTLS(in.tls)))
		}
		in.grpcSrv = grpc.NewServer(opts...)
		collogspb.RegisterLogsServiceServer(in.grpcSrv, grpcService{in: in})
		in.served.Go(func() {
			if err := in.grpcSrv.Serve(grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				in.log.Error("otlp grpc listener stopped", slog.Any("error", err))
			}
		})
	}
	in.log.Info("otlp input listening", slog.String("http", in.HTTPAddr()), slog.String("grpc", in.GRPCAddr()),
		slog.Bool("tls", in.tls != nil))
	return nil
}

// HTTPAddr and GRPCAddr are the addresses listened on once open ("" when
// off or before).
func (in *Input) HTTPAddr() string {
	if p := in.httpAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// GRPCAddr: see HTTPAddr.
func (in *Input) GRPCAddr() string {
	if p := in.grpcAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// outcome is what became of an export's records.
type outcome int

const (
	stored   outcome = iota // all kept records committed (or none to keep)
	full                    // did not fit the queue: retry later
	stopping                // the input stops: retry later
	timedOut                // no commit within commit-timeout-ms: retry (may duplicate)
	gone                    // the sender left
)

// export maps req, queues the records it keeps as one unit and waits for
// their commit. rejected counts records over max-record-bytes.
func (in *Input) export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (rejected int64, out outcome) {
	in.stats.exports.Add(1)
	var m mapper
	var events [][]byte
	_ = m.request(req, in.now(), func(ev []byte) error {
		if len(ev) > in.cfg.MaxRecordBytes {
			rejected++
			return nil
		}
		events = append(events, ev)
		return nil
	})
	in.stats.invalid.Add(m.invalid)
	in.stats.rejected.Add(rejected)
	if len(events) == 0 {
		in.stats.stored.Add(1)
		return rejected, stored
	}
	pending, err := in.q.TryPutPending(events)
	switch {
	case err != nil:
		in.stats.refused.Add(1)
		return rejected, stopping
	case pending == nil:
		in.stats.refused.Add(1)
		return rejected, full
	}
	in.stats.records.Add(int64(len(events)))
	switch pending.Wait(ctx, in.cfg.CommitTimeout) {
	case pushq.Stored:
		in.stats.stored.Add(1)
		return rejected, stored
	case pushq.Closed:
		return rejected, stopping
	case pushq.TimedOut:
		in.stats.commitTimeouts.Add(1)
		return rejected, timedOut
	default: // pushq.Left
		return rejected, gone
	}
}

// Poll hands up to max records to the scheduler, never waiting.
func (in *Input) Poll(_ context.Context, dst []input.Event, max int) ([]input.Event, error) {
	return in.q.Poll(dst, max), nil
}

// Committed releases the answers of the exports whose last record is
// among the next n events polled.
func (in *Input) Committed(n int) { in.q.Committed(n) }

// Drain stops taking exports (refused as retryable) and hands over the
// records taken, so they are stored and their exports answered success.
func (in *Input) Drain(dst []input.Event) []input.Event {
	return in.q.Drain(dst)
}

// Close stops both listeners; exports still waiting fail as retryable.
// Idempotent.
func (in *Input) Close() error {
	in.closeOnce.Do(func() {
		in.q.Close()
		if in.httpSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), closeWait)
			if in.httpSrv.Shutdown(ctx) != nil {
				_ = in.httpSrv.Close()
			}
			cancel()
		}
		if in.grpcSrv != nil {
			stopped := make(chan struct{})
			go func() { in.grpcSrv.GracefulStop(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(closeWait):
				in.grpcSrv.Stop()
			}
		}
		in.served.Wait()
	})
	return nil
}

// closeWait bounds Close's wait for the exports in progress.
const closeWait = 5 * time.Second

// Wakeup fires when records were queued.
func (in *Input) Wakeup() <-chan struct{} { return in.q.Wakeup() }

// Stats maps the counters onto the agent's: LinesRead are records kept,
// BytesRead request bytes, ParseErrors requests that did not decode,
// DroppedQueueFull exports refused as retryable (not dropped: the
// exporter retries), Errors the rejected records and commit timeouts.
func (in *Input) Stats() input.Stats {
	s := &in.stats
	return input.Stats{
		LinesRead: s.records.Load(), BytesRead: s.bytes.Load(), Events: in.q.Handed(),
		InvalidSequences: s.invalid.Load(), ParseErrors: s.badRequests.Load(),
		DroppedQueueFull: s.refused.Load(), Errors: s.rejected.Load() + s.commitTimeouts.Load(),
	}
}
