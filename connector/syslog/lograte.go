package syslog

import (
	"context"
	"log/slog"
	"sync"
	"time"
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
// that kind carries the count ("suppressed"), or flush reports it. Senders
// choose what reaches the log, so the log must not grow with them. Safe
// for concurrent use.
type logLimiter struct {
	log   *slog.Logger
	every time.Duration

	mu    sync.Mutex
	kinds map[string]*logKind
}

type logKind struct {
	last       time.Time
	suppressed int64
}

func newLogLimiter(log *slog.Logger, every time.Duration) *logLimiter {
	return &logLimiter{log: log, every: every, kinds: map[string]*logKind{}}
}

// warn logs msg with attrs unless a line of kind was logged less than an
// interval ago, in which case it is only counted.
func (l *logLimiter) warn(kind, msg string, attrs ...slog.Attr) {
	now := time.Now()
	l.mu.Lock()
	k := l.kinds[kind]
	if k == nil {
		k = &logKind{}
		l.kinds[kind] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < l.every {
		k.suppressed++
		l.mu.Unlock()
		return
	}
	n := k.suppressed
	k.last, k.suppressed = now, 0
	l.mu.Unlock()
	if n > 0 {
		attrs = append(attrs, slog.Int64("suppressed", n))
	}
	l.log.LogAttrs(context.Background(), slog.LevelWarn, msg, attrs...)
}

// flush logs, for each kind with lines held back, how many; called once
// an interval so a flood that stopped still gets its count logged, and
// at a stop with all set (whatever the interval).
func (l *logLimiter) flush(all bool) {
	now := time.Now()
	l.mu.Lock()
	type held struct {
		kind string
		n    int64
	}
	var out []held
	for kind, k := range l.kinds {
		if k.suppressed > 0 && (all || now.Sub(k.last) >= l.every) {
			out = append(out, held{kind, k.suppressed})
			k.suppressed = 0
		}
	}
	l.mu.Unlock()
	for _, h := range out {
		l.log.Warn("syslog: lines about bad senders were held back (logged at most once per log-interval-ms each)",
			slog.String("kind", h.kind), slog.Int64("suppressed", h.n), slog.Duration("log_interval", l.every))
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
