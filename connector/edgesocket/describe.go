package edgesocket

import (
	"fmt"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Describer = (*Input)(nil)

// Collector is one sender connected to the relay, as the status document
// lists it under "collectors".
type Collector struct {
	Name          string    `json:"name"`
	Remote        string    `json:"remote"`
	ConnectedAt   time.Time `json:"connected_at"`
	Batches       uint64    `json:"batches"`
	Bytes         uint64    `json:"bytes"`
	Received      uint64    `json:"received"`
	Refused       uint64    `json:"refused"`
	BatchesPerSec float64   `json:"batches_per_second"`
	Owed          int       `json:"replies_owed"`
	LastError     string    `json:"last_error,omitempty"`
}

// CollectorTotal are the relay's counters for one token name, as the
// status document lists them under "collector_totals".
type CollectorTotal struct {
	Name        string     `json:"name"`
	Connected   int        `json:"connected"`
	Sessions    uint64     `json:"sessions"`
	Batches     uint64     `json:"batches"`
	Bytes       uint64     `json:"bytes"`
	Received    uint64     `json:"received"`
	Refused     uint64     `json:"refused"`
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
}

// maxCollectorLines bounds the lines for people a big relay adds to each
// status document; the "collectors" record lists every one.
const maxCollectorLines = 20

// Describe says what the relay took (Events and BytesRead: the batches
// handed to the scheduler and their stored bytes; Errors: the batches
// answered QUEUE_FULL), its collectors, and its counters per token name
// (names come from the config, so the label values are bounded). Safe for
// concurrent use.
func (in *Input) Describe() component.Description {
	s := in.Stats()
	d := component.Description{Values: input.Counts{
		LinesRead: s.LinesRead, BytesRead: s.BytesRead, Events: s.Events, Errors: s.Errors,
	}.Values()}
	for _, c := range s.AuthFailures {
		d.Values = append(d.Values, component.Value{Metric: "relay_auth_failures_total", Labels: []component.Label{{Name: "reason", Value: c.Reason}}, N: c.N,
			Help: "Connections to a relay input that did not authenticate, by reason (wrong_token, throttled, timeout, line_too_long, tls_handshake, closed)."})
	}
	d.Values = append(d.Values, component.Value{Key: "unauthenticated_evicted", OmitZero: true, Metric: "relay_unauthenticated_evicted_total", N: s.Evicted,
		Help: "Connections to a relay input closed before authenticating to make room for newer ones (the pre-authentication budget was full)."})
	peers, totals := in.Peers(), in.PeerTotals()
	var cs []Collector
	for i, p := range peers {
		cs = append(cs, Collector{Name: p.Name, Remote: p.Remote, ConnectedAt: p.Since, Batches: p.Batches, Bytes: p.Bytes,
			Received: p.Received, Refused: p.Refused, BatchesPerSec: p.Rate, Owed: p.Owed, LastError: p.LastError})
		switch {
		case i < maxCollectorLines:
			line := fmt.Sprintf("%s %s: %.1f batches/s, %d batches, %d stored, %d refused", p.Name, p.Remote, p.Rate, p.Batches, p.Received, p.Refused)
			if p.LastError != "" {
				line += "; last error: " + oneLine(p.LastError)
			}
			d.Lines = append(d.Lines, component.Line{Label: "collector", Text: line})
		case i == maxCollectorLines:
			d.Lines = append(d.Lines, component.Line{Text: "… (status --json lists every collector)"})
		}
	}
	var ts []CollectorTotal
	var batches uint64
	for _, t := range totals {
		batches += t.Batches
		ct := CollectorTotal{Name: t.Name, Connected: t.Connected, Sessions: t.Sessions, Batches: t.Batches, Bytes: t.Bytes,
			Received: t.Received, Refused: t.Refused, LastError: t.LastError}
		if !t.LastErrorAt.IsZero() {
			at := t.LastErrorAt
			ct.LastErrorAt = &at
		}
		ts = append(ts, ct)
		if t.Connected == 0 && t.LastError != "" {
			d.Lines = append(d.Lines, component.Line{Label: "disconnected", Text: t.Name + ": last error " + oneLine(t.LastError)})
		}
		name := []component.Label{{Name: "name", Value: t.Name}}
		d.Values = append(d.Values,
			component.Value{Metric: "relay_collectors_connected", Kind: component.Gauge, Labels: name, N: int64(t.Connected),
				Help: "Collectors connected to a relay input, per token name."},
			component.Value{Metric: "relay_batches_total", Labels: name, N: int64(t.Batches),
				Help: "Batches a relay input read from collectors, per token name."},
			component.Value{Metric: "relay_bytes_total", Labels: name, N: int64(t.Bytes),
				Help: "Payload bytes (as sent) a relay input read from collectors, per token name."},
			component.Value{Metric: "relay_batches_stored_total", Labels: name, N: int64(t.Received),
				Help: "Batches a relay input answered RECEIVED (stored in its queue), per token name."},
			component.Value{Metric: "relay_batches_refused_total", Labels: name, N: int64(t.Refused),
				Help: "Batches a relay input answered otherwise (QUEUE_FULL, DECODE_FAILED...), per token name."},
		)
	}
	if cs != nil {
		d.Records = append(d.Records, component.Record{Key: "collectors", Value: cs})
	}
	if ts != nil {
		d.Records = append(d.Records, component.Record{Key: "collector_totals", Value: ts})
	}
	d.Summary = fmt.Sprintf("%d collectors connected, %d batches read since start", len(peers), batches)
	return d
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
