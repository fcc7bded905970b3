package syslog

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

// The listener describes the figures every input reports (LinesRead are
// messages) and its connections; their figures leave the status document
// while 0, their series stay.
func TestDescribe(t *testing.T) {
	in := openInput(t, func(c *Config) { c.Protocol = ProtoTCP })
	d := in.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	if d.Files != nil {
		t.Errorf("a listener lists files: %v", d.Files)
	}
	conn, err := net.DialTimeout("tcp", in.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("<14>1 - h app - - - one\n<14>1 - h app - - - two\n")); err != nil {
		t.Fatal(err)
	}
	if got := len(collect(t, in, 2, 10*time.Second)); got != 2 {
		t.Fatalf("got %d messages, want 2", got)
	}
	d = in.Describe()
	for key, want := range map[string]int64{input.KeyLinesRead: 2, input.KeyEvents: 2, "connections": 1, "connections_total": 1} {
		if n, ok := d.Value(key); !ok || n != want {
			t.Errorf("%s = %d (reported %v), want %d", key, n, ok, want)
		}
	}
	if !strings.HasPrefix(d.Summary, "1 connections open (1 accepted, 0 refused), 2 messages") {
		t.Errorf("summary %q", d.Summary)
	}
	for _, v := range d.Values {
		if v.Key == "parse_errors" && (!v.OmitZero || v.Metric != "input_parse_errors_total") {
			t.Errorf("parse_errors: %+v", v)
		}
	}
}
