package syslog

import (
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/edge-agent/edge-agent/transport/ratelog"
)

// Kinds of lines about bad senders, each limited on its own so a flood
// of one kind does not hide another.
const (
	logFraming   = "bad_framing"
	logConnFail  = "connection_failed"
	logHandshake = "tls_handshake_failed"
	logRefused   = "connection_refused"
	logMalformed = "malformed_dropped"
	logEvicted   = "connection_evicted"
)

// logLimiter lets through the first line of a kind and then at most one
// per interval; the lines it holds back are counted, and the next line of
// that kind carries the count (suppressed_since_last), or flush reports
// it. Senders choose what reaches the log, so the log must not grow with
// them. Safe for concurrent use.
type logLimiter struct {
	log   *slog.Logger
	every time.Duration

	mu    sync.Mutex
	kinds map[string]*ratelog.Warner
}

func newLogLimiter(log *slog.Logger, every time.Duration) *logLimiter {
	return &logLimiter{log: log, every: every, kinds: map[string]*ratelog.Warner{}}
}

// warn logs msg with attrs unless a line of kind was logged less than an
// interval ago, in which case it is only counted.
func (l *logLimiter) warn(kind, msg string, attrs ...any) {
	l.mu.Lock()
	w := l.kinds[kind]
	if w == nil {
		w = &ratelog.Warner{Every: l.every}
		l.kinds[kind] = w
	}
	l.mu.Unlock()
	w.Warn(l.log, msg, attrs...)
}

// flush logs, for each kind with lines held back, how many; called once
// an interval so a flood that stopped still gets its count logged, and
// at a stop with all set (whatever the interval).
func (l *logLimiter) flush(all bool) {
	l.mu.Lock()
	kinds := make(map[string]*ratelog.Warner, len(l.kinds))
	maps.Copy(kinds, l.kinds)
	l.mu.Unlock()
	for kind, w := range kinds {
		if n := w.TakeHeld(all); n > 0 {
			l.log.Warn("syslog: lines about bad senders were held back (logged at most once per log-interval-ms each)",
				slog.String("kind", kind), slog.Int("suppressed", n), slog.Duration("log_interval", l.every))
		}
	}
}

// report logs, once per log-interval-ms until done, the lines held back
// and the client certificates refused.
func (in *Input) report(done <-chan struct{}) {
	defer in.wg.Done()
	t := time.NewTicker(in.cfg.LogInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			in.flushReports(true)
			return
		case <-t.C:
			in.flushReports(false)
		}
	}
}

func (in *Input) flushReports(all bool) {
	in.logs.flush(all)
	if in.pen == nil {
		return
	}
	r, ok := in.pen.report()
	if !ok {
		return
	}
	in.log.Warn("syslog: TLS client certificates refused (mutual TLS); their sources wait before each new handshake",
		slog.Int64(authNoCert, r.byReason[authNoCert]), slog.Int64(authBadCert, r.byReason[authBadCert]),
		slog.Int("sources", r.sources), slog.String("top_source", r.top.String()), slog.Int64("top_source_refused", r.topCount),
		slog.Duration("interval", in.cfg.LogInterval), slog.Duration("max_delay", in.cfg.AuthFailureMaxDelay))
}
