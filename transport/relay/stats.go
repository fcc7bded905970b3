package relay

import (
	"log/slog"
	"sync/atomic"
)

// Stats are cumulative counters since New.
type Stats struct {
	Connections     uint64 // TCP connections accepted
	Rejected        uint64 // authenticated connections answered REJECTED (max connections)
	Sessions        uint64 // connections authenticated (ACK)
	Batches         uint64 // __BATCH__ requests, well-formed or not
	Records         uint64 // records handed to the Handler
	DecodeFailures  uint64 // DECODE_FAILED replies
	DecryptFailures uint64 // DECRYPT_FAILED replies
	BadRequests     uint64 // BAD_REQUEST and INVALID_PARAM replies
	// AuthFailures are the connections that did not authenticate, by
	// reason; their sum is AuthFailures.Total.
	AuthFailures AuthFailures
	// Evicted are connections not yet authenticated closed to make room
	// for a newer one (the pre-authentication budget was full).
	Evicted uint64
	// AuthDelayed are token checks delayed because their source address
	// failed recently.
	AuthDelayed uint64
}

// AuthFailures count failed authentications by reason. None holds
// anything a client sent.
type AuthFailures struct {
	WrongToken uint64 // a token line with no accepted token: answered AUTH_FAILED
	// Throttled: a token line from a source being slowed down, evicted
	// while it waited, so never checked.
	Throttled uint64
	Timeout   uint64 // no whole token line within AuthTimeout (silent, or half sent)
	BadLine   uint64 // a token line over the limit
	TLS       uint64 // the TLS handshake failed
	Closed    uint64 // the client closed or reset before a whole line
}

// Total is the sum over the reasons.
func (a AuthFailures) Total() uint64 {
	return a.WrongToken + a.Throttled + a.Timeout + a.BadLine + a.TLS + a.Closed
}

// ByReason lists the counts with the reasons' metric label values, in a
// fixed order.
func (a AuthFailures) ByReason() []ReasonCount {
	return []ReasonCount{
		{string(reasonWrongToken), a.WrongToken}, {string(reasonThrottled), a.Throttled}, {string(reasonTimeout), a.Timeout},
		{string(reasonBadLine), a.BadLine}, {string(reasonTLS), a.TLS}, {string(reasonClosed), a.Closed},
	}
}

// ReasonCount is one reason's count.
type ReasonCount struct {
	Reason string
	N      uint64
}

// authReason is a reason a connection did not authenticate.
type authReason string

const (
	reasonWrongToken authReason = "wrong_token"
	reasonThrottled  authReason = "throttled"
	reasonTimeout    authReason = "timeout"
	reasonBadLine    authReason = "line_too_long"
	reasonTLS        authReason = "tls_handshake"
	reasonClosed     authReason = "closed"
)

type counters struct {
	connections, rejected, sessions  atomic.Uint64
	batches, records, decodeFailures atomic.Uint64
	decryptFailures, badRequests     atomic.Uint64
	wrongToken, throttled, timeout   atomic.Uint64
	badLine                          atomic.Uint64
	tlsFailed, closedEarly           atomic.Uint64
	evicted, authDelayed             atomic.Uint64
}

func (c *counters) authFailed(r authReason) {
	switch r {
	case reasonWrongToken:
		c.wrongToken.Add(1)
	case reasonThrottled:
		c.throttled.Add(1)
	case reasonTimeout:
		c.timeout.Add(1)
	case reasonBadLine:
		c.badLine.Add(1)
	case reasonTLS:
		c.tlsFailed.Add(1)
	default:
		c.closedEarly.Add(1)
	}
}

func (c *counters) snapshot() Stats {
	return Stats{
		Connections:     c.connections.Load(),
		Rejected:        c.rejected.Load(),
		Sessions:        c.sessions.Load(),
		Batches:         c.batches.Load(),
		Records:         c.records.Load(),
		DecodeFailures:  c.decodeFailures.Load(),
		DecryptFailures: c.decryptFailures.Load(),
		BadRequests:     c.badRequests.Load(),
		AuthFailures: AuthFailures{
			WrongToken: c.wrongToken.Load(), Throttled: c.throttled.Load(), Timeout: c.timeout.Load(), BadLine: c.badLine.Load(),
			TLS: c.tlsFailed.Load(), Closed: c.closedEarly.Load(),
		},
		Evicted:     c.evicted.Load(),
		AuthDelayed: c.authDelayed.Load(),
	}
}

// authReport logs, once per AuthLogInterval and only when there were
// any, the failed authentications and evictions since the last report:
// counts by reason and the sources being slowed down, never what was
// presented.
type authReport struct {
	last Stats
}

func (a *authReport) report(l *slog.Logger, now Stats, slowed int) {
	was := a.last
	a.last = now
	failed := now.AuthFailures.Total() - was.AuthFailures.Total()
	evicted := now.Evicted - was.Evicted
	if failed == 0 && evicted == 0 {
		return
	}
	attrs := []any{slog.Uint64("failed", failed)}
	cur, old := now.AuthFailures.ByReason(), was.AuthFailures.ByReason()
	for i, rc := range cur {
		if n := rc.N - old[i].N; n > 0 {
			attrs = append(attrs, slog.Uint64(rc.Reason, n))
		}
	}
	attrs = append(attrs, slog.Uint64("evicted_unauthenticated", evicted),
		slog.Uint64("delayed", now.AuthDelayed-was.AuthDelayed), slog.Int("sources_slowed", slowed))
	l.Warn("edgesocket collectors failed to authenticate since the last report", attrs...)
}
