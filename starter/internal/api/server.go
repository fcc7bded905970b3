package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/dbview"
	"github.com/edge-agent/edge-agent/starter/internal/tap"
)

// Source is what the server observes; *agent.Agent is one.
type Source interface {
	Snapshot() agent.Status
}

// DefaultStallAfter is how long the scheduler loop may go without a turn
// before /healthz fails (agent.Status.Health's judgement).
const DefaultStallAfter = agent.DefaultStallAfter

// Options configure the server.
type Options struct {
	Settings Settings
	// FileToken is the token the agent wrote to its token file: accepted
	// beside http.token (see guard). Empty: only http.token.
	FileToken string
	Source    Source
	// DB serves /db/ (the db commands on a running agent); nil: no /db/.
	DB DB
	// Version, Commit and ConfigHash are shown in /debug/status and
	// edge_agent_build_info.
	Version, Commit, ConfigHash string
	// WALPath is the WAL file (queue.path): its filesystem's space is in
	// /metrics. Empty: no space figures.
	WALPath string
	// Management, when set, fills the status' management part.
	Management func() *Management
	// Diagnostics, when set, serves GET /debug/diagnostics: the
	// diagnostics bundle (.tar.gz), which `edge-agent diagnostics` saves.
	Diagnostics func(ctx context.Context) ([]byte, error)
	// Reread, when set, serves POST /db/reread: an input reads a file
	// again from an offset, made by the agent's scheduler loop.
	Reread func(ctx context.Context, a dbview.RereadArgs) (dbview.RereadReport, error)
	// Tap, when set, serves GET /debug/tap: a live sample of the events
	// at one stage (agent.Agent.Tap).
	Tap func(tap.Filter) (*tap.Sub, error)
	// StallAfter defaults to DefaultStallAfter.
	StallAfter time.Duration
	Logger     *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.StallAfter <= 0 {
		o.StallAfter = DefaultStallAfter
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// StatusJSON is the /debug/status document as the API serves it, built in
// memory for the diagnostics bundle, which needs no credential to ask it.
func StatusJSON(o Options) ([]byte, error) {
	o.defaults()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(statusOf(o.Source.Snapshot(), &o, o.Now())); err != nil {
		return nil, fmt.Errorf("encode the status: %w", err)
	}
	return b.Bytes(), nil
}

// Handler serves the endpoints (tests use it with httptest).
func Handler(o Options) http.Handler {
	o.defaults()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(newRegistry(&o), promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if ok, reason := healthy(o.Source.Snapshot(), o.Now(), o.StallAfter); !ok {
			http.Error(w, reason, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if st := o.Source.Snapshot(); st.State != "running" {
			http.Error(w, "not ready: agent is "+st.State, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /debug/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(statusOf(o.Source.Snapshot(), &o, o.Now())); err != nil {
			o.Logger.Debug("write /debug/status", "error", err)
		}
	})
	if o.DB != nil {
		dbRoutes(mux, &o)
	}
	if o.Diagnostics != nil {
		mux.HandleFunc("GET /debug/diagnostics", func(w http.ResponseWriter, r *http.Request) {
			data, err := o.Diagnostics(r.Context())
			if err != nil {
				http.Error(w, "diagnostics bundle: "+err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/gzip")
			if _, err := w.Write(data); err != nil {
				o.Logger.Debug("write /debug/diagnostics", "error", err)
			}
		})
	}
	if o.Tap != nil {
		mux.HandleFunc("GET "+TapPath, func(w http.ResponseWriter, r *http.Request) { serveTap(w, r, &o) })
	}
	if o.Settings.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return guard(&o, mux)
}

// healthy is agent.Status.Health: OpAMP reports the same judgement.
func healthy(st agent.Status, now time.Time, stallAfter time.Duration) (bool, string) {
	h := st.Health(now, stallAfter)
	return h.Healthy, h.Reason
}

// Server is the running HTTP server.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// Start binds http.listen and serves in the background. A bind failure is
// returned naming the key, so the operator knows which setting to change.
func Start(o Options) (*Server, error) {
	var tlsCfg *tls.Config
	if o.Settings.TLS.Enabled() {
		c, err := o.Settings.TLS.serverConfig()
		if err != nil {
			return nil, err
		}
		tlsCfg = c
	}
	ln, err := net.Listen("tcp", strings.TrimSpace(o.Settings.Listen))
	if err != nil {
		return nil, fmt.Errorf("http.listen %q: %w", o.Settings.Listen, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		srv: &http.Server{
			Handler:           Handler(o),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("HTTP API stopped", "error", err)
		}
	}()
	logger.Info("HTTP API listening", "address", ln.Addr().String())
	return s, nil
}

// Addr is the address bound (with the port chosen when listen had :0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting, lets requests in flight finish until ctx ends,
// then closes what is left.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.done
	if err != nil {
		return fmt.Errorf("stop HTTP API: %w", err)
	}
	return nil
}
