package self

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
)

// The keys of a record's event.
const (
	KeyTime      = "time"
	KeyLevel     = "level"
	KeyMsg       = "msg"
	KeyComponent = "component"
	KeyAttrs     = "attrs"
)

// Handler returns a handler that passes every record to next as it
// would, and ships the records a sink of h takes. A nil hub returns next.
func (h *Hub) Handler(next slog.Handler) slog.Handler {
	if h == nil {
		return next
	}
	return &handler{next: next, hub: h}
}

// Unshipped returns l with a handler whose records reach no sink (see the
// package's loop protection); l itself when its handler is not a hub's.
func Unshipped(l *slog.Logger) *slog.Logger {
	if h, ok := l.Handler().(interface{ WithoutOwnLogs() slog.Handler }); ok {
		return slog.New(h.WithoutOwnLogs())
	}
	return l
}

type handler struct {
	next slog.Handler
	hub  *Hub
	// off: WithoutOwnLogs; nothing is shipped.
	off bool
	// attrs are those of With, each under the groups open when it was
	// added; groups those open now.
	attrs  []groupedAttr
	groups []string
}

type groupedAttr struct {
	groups []string
	attr   slog.Attr
}

var _ slog.Handler = (*handler)(nil)

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l) || (!h.off && h.hub.enabled(l))
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	var err error
	if h.next.Enabled(ctx, r.Level) {
		err = h.next.Handle(ctx, r)
	}
	if !h.off && h.hub.enabled(r.Level) {
		h.hub.publish(r.Level, h.encode(r))
	}
	return err
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	c.attrs = append(h.attrs[:len(h.attrs):len(h.attrs)], make([]groupedAttr, 0, len(as))...)
	for _, a := range as {
		c.attrs = append(c.attrs, groupedAttr{groups: h.groups, attr: a})
	}
	return &c
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.next = h.next.WithGroup(name)
	c.groups = append(h.groups[:len(h.groups):len(h.groups)], name)
	return &c
}

// WithoutOwnLogs is the handler Unshipped gives: the same output, no
// sink.
func (h *handler) WithoutOwnLogs() slog.Handler {
	c := *h
	c.off = true
	return &c
}

// record is one record's event.
type record struct {
	Time      string         `json:"time"`
	Level     string         `json:"level"`
	Msg       string         `json:"msg"`
	Component string         `json:"component"`
	Attrs     map[string]any `json:"attrs,omitempty"`
}

// encode makes r's event. Attributes of no group that name the part
// logging (component, input_id, output_type) set component as well.
func (h *handler) encode(r slog.Record) []byte {
	rec := record{Level: r.Level.String(), Msg: r.Message, Component: "agent"}
	if !r.Time.IsZero() {
		rec.Time = r.Time.UTC().Format(time.RFC3339Nano)
	}
	attrs := map[string]any{}
	add := func(groups []string, a slog.Attr) {
		if len(groups) == 0 {
			rec.Component = componentOf(a, rec.Component)
		}
		put(attrs, groups, a)
	}
	for _, ga := range h.attrs {
		add(ga.groups, ga.attr)
	}
	r.Attrs(func(a slog.Attr) bool {
		add(h.groups, a)
		return true
	})
	if len(attrs) > 0 {
		rec.Attrs = attrs
	}
	b, err := json.Marshal(rec)
	if err != nil {
		// A value json cannot encode (a channel inside an any): ship the
		// record with every attribute as text rather than lose it.
		rec.Attrs = map[string]any{"encoding_error": err.Error()}
		b, _ = json.Marshal(rec)
	}
	return b
}

// componentOf is what a with-attribute says of the part logging, or cur.
func componentOf(a slog.Attr, cur string) string {
	v := a.Value.Resolve()
	if v.Kind() != slog.KindString {
		return cur
	}
	switch a.Key {
	case "component":
		return v.String()
	case "input_id":
		return "input:" + v.String()
	case "output_type":
		return "output:" + v.String()
	}
	return cur
}

// put stores a under groups in m, as slog's JSON handler would nest it.
func put(m map[string]any, groups []string, a slog.Attr) {
	v := a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	for _, g := range groups {
		sub, ok := m[g].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[g] = sub
		}
		m = sub
	}
	if v.Kind() == slog.KindGroup {
		as := v.Group()
		if len(as) == 0 {
			return
		}
		if a.Key == "" {
			for _, ga := range as {
				put(m, nil, ga)
			}
			return
		}
		for _, ga := range as {
			put(m, []string{a.Key}, ga)
		}
		return
	}
	m[a.Key] = plain(v)
}

// plain is v as a JSON value: durations with their unit, errors as text.
func plain(v slog.Value) any {
	switch v.Kind() {
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindTime:
		return v.Time().UTC().Format(time.RFC3339Nano)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return x.Error()
		case fmt.Stringer:
			return x.String()
		case json.Marshaler:
			return x
		}
		if _, err := json.Marshal(v.Any()); err != nil {
			return fmt.Sprint(v.Any())
		}
	}
	return v.Any()
}
