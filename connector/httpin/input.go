package httpin

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

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/pushq"
	"github.com/edge-agent/edge-agent/transport/ratelog"
)

// Input is a running http input. Open, Poll, Drain, Committed and Close
// are the scheduler's (one goroutine); the server's handlers put records
// into the queue and wait for Committed to release them.
type Input struct {
	cfg   *Config
	log   *slog.Logger
	token string
	tls   *tls.Config
	q     *pushq.Queue
	stats stats
	now   func() time.Time
	// warnRefused spaces the WARNs of 429 answers.
	warnRefused ratelog.Warner
	// slots bounds the requests in progress (max-concurrent-requests).
	slots chan struct{}

	srv       *http.Server
	served    chan struct{}
	addr      atomic.Pointer[string]
	closeOnce sync.Once
	closeErr  error
}

var (
	_ input.Input         = (*Input)(nil)
	_ input.Acker         = (*Input)(nil)
	_ input.Waker         = (*Input)(nil)
	_ input.StatsReporter = (*Input)(nil)
)

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
		q:      pushq.New(cfg.MaxPendingBytes),
		now:    time.Now,
		slots:  make(chan struct{}, cfg.MaxConcurrentRequests),
		served: make(chan struct{}),
	}
	var err error
	if in.token, err = cfg.token(); err != nil {
		return nil, err
	}
	if in.tls, err = cfg.TLS.Load(); err != nil {
		return nil, err
	}
	return in, nil
}

// Open starts listening.
func (in *Input) Open(ctx context.Context, _ input.OpenOptions) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", in.cfg.Listen)
	if err != nil {
		return fmt.Errorf("http input: listen on %s: %w (is another program using the port? change listen)", in.cfg.Listen, err)
	}
	addr := ln.Addr().String()
	in.addr.Store(&addr)
	ln = &limitListener{Listener: ln, slots: make(chan struct{}, in.cfg.MaxConnections), stats: &in.stats}
	if in.tls != nil {
		ln = tls.NewListener(ln, in.tls)
	}
	mux := http.NewServeMux()
	mux.Handle(in.cfg.Path, http.HandlerFunc(in.serve))
	in.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: in.cfg.ReadHeaderTimeout,
		ReadTimeout:       in.cfg.ReadTimeout,
		WriteTimeout:      in.cfg.WriteTimeout,
		IdleTimeout:       in.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(in.log.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(in.served)
		if err := in.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			in.log.Error("http input stopped serving", slog.Any("error", err))
		}
	}()
	in.log.Info("http input listening", slog.String("listen", addr), slog.String("path", in.cfg.Path),
		slog.Bool("tls", in.tls != nil), slog.Bool("mtls", in.tls != nil && in.tls.ClientCAs != nil),
		slog.Bool("bearer_token", in.token != ""))
	return nil
}

// Addr is the address listened on once open ("" before).
func (in *Input) Addr() string {
	if p := in.addr.Load(); p != nil {
		return *p
	}
	return ""
}

// Poll hands up to max records to the scheduler, never waiting.
func (in *Input) Poll(_ context.Context, dst []input.Event, max int) ([]input.Event, error) {
	return in.q.Poll(dst, max), nil
}

// Committed releases the answers of the requests whose last record is
// among the next n events polled.
func (in *Input) Committed(n int) { in.q.Committed(n) }

// Drain stops taking requests (they are answered 503) and hands over the
// records taken, so they are stored, and their senders answered 200,
// before Close.
func (in *Input) Drain(dst []input.Event) []input.Event {
	return in.q.Drain(dst)
}

// Close stops the listener and waits (bounded) for the requests in
// progress to be answered; those whose records were not stored get 503.
// Idempotent.
func (in *Input) Close() error {
	in.closeOnce.Do(func() {
		in.q.Close()
		if in.srv == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), closeWait)
		defer cancel()
		if err := in.srv.Shutdown(ctx); err != nil {
			_ = in.srv.Close()
		}
		<-in.served
	})
	return in.closeErr
}

// closeWait bounds Close's wait for the requests in progress.
const closeWait = 5 * time.Second

// Wakeup fires when records were queued.
func (in *Input) Wakeup() <-chan struct{} { return in.q.Wakeup() }

// limitListener accepts at most cap(slots) connections at once; Accept
// waits for one to close (the kernel's backlog holds the next).
type limitListener struct {
	net.Listener
	slots chan struct{}
	stats *stats
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	l.stats.connections.Add(1)
	l.stats.connectionsTotal.Add(1)
	return &limitConn{Conn: c, release: func() { <-l.slots; l.stats.connections.Add(-1) }}, nil
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
