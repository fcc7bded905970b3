package syslog

import (
	"fmt"
	"github.com/edge-agent/edge-agent/connector/syslog/message"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

// What strict mode keeps: RFC 5424 that parses, RFC 3164 with <PRI> and
// a timestamp; everything else is dropped.
func TestWellFormed(t *testing.T) {
	for _, tc := range []struct {
		msg    string
		format string
		keep   bool
	}{
		{"<34>1 2003-10-11T22:14:15.003Z mymachine su - ID47 - 'su root' failed", message.FormatAuto, true},
		{"<165>1 - - - - - -", message.FormatAuto, true},
		{"<34>Oct 11 22:14:15 mymachine su: 'su root' failed", message.FormatAuto, true},
		{"<13>Oct  1 02:03:04 app[12]: no hostname", message.FormatAuto, true},
		{"<13>2003-10-11T22:14:15.003Z host app: rsyslog's RFC 3339 stamp", message.FormatAuto, true},
		{"<34>Oct 11 22:14:15 mymachine su: 'su root' failed", message.FormatRFC3164, true},
		{"Oct 11 22:14:15 mymachine su: no PRI", message.FormatAuto, false},
		{"<34>no timestamp at all", message.FormatAuto, false},
		{"<34>1 2003-10-11T22:14:15.003Z host", message.FormatAuto, false},    // 5424 cut short
		{"<999>Oct 11 22:14:15 host app: bad PRI", message.FormatAuto, false}, // PRI over 191
		{"<34>Oct 11 22:14:15 mymachine su: fine", message.FormatRFC5424, false},
		{"just text", message.FormatAuto, false},
		{"\x00\x01\xfe<13>", message.FormatAuto, false},
	} {
		m, err := message.Parse([]byte(tc.msg), tc.format)
		if got := message.WellFormed([]byte(tc.msg), &m, err); got != tc.keep {
			t.Errorf("%q (%s): kept %v, want %v", tc.msg, tc.format, got, tc.keep)
		}
	}
}

// strict over UDP: a flood of random bytes is dropped and counted, none
// of it delivered; well-formed messages in between all arrive. Without
// strict the same bytes are delivered with parse_error or as RFC 3164.
func TestStrictDropsGarbage(t *testing.T) {
	for _, strict := range []bool{true, false} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			in := openInput(t, func(c *Config) { c.Protocol = ProtoUDP; c.Strict = strict; c.MaxMessageBytes = 1024 })
			conn, err := net.Dial("udp", in.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			const garbage, good = 200, 20
			buf := make([]byte, 300)
			for i := range garbage {
				for j := range buf {
					buf[j] = byte(rng.Uint32())
				}
				if _, err := conn.Write(buf[:1+rng.IntN(len(buf))]); err != nil {
					t.Fatal(err)
				}
				if i%(garbage/good) == 0 {
					fmt.Fprintf(conn, "<13>1 - h app - - - good %d", i)
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for in.Stats().LinesRead < garbage+good && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			st := in.Stats()
			if st.LinesRead != garbage+good {
				t.Fatalf("read %d of %d datagrams (the kernel dropped %d with a 4 MiB buffer)", st.LinesRead, garbage+good, st.DroppedReceiveBuffer)
			}
			wantEvents := garbage + good
			if strict {
				wantEvents = good
			}
			evs := collect(t, in, wantEvents, 5*time.Second)
			st = in.Stats()
			if strict {
				if st.DroppedMalformed != garbage || len(evs) != good || st.ParseErrors != 0 {
					t.Fatalf("%d events, stats %+v", len(evs), st)
				}
				for _, e := range evs {
					if e["format"] != message.FormatRFC5424 {
						t.Fatalf("strict delivered %v", e)
					}
				}
				return
			}
			if st.DroppedMalformed != 0 || len(evs) != garbage+good {
				t.Fatalf("%d events, stats %+v", len(evs), st)
			}
		})
	}
}

// Whatever the bytes, the strict check does not fail, and what it keeps
// starts with a <PRI> and parsed without error.
func FuzzWellFormed(f *testing.F) {
	for _, s := range []string{"<34>1 2003-10-11T22:14:15.003Z h su - ID47 - m", "<13>Oct  1 02:03:04 app[12]: x", "<13>", "", "\xff<1>"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := message.Parse(b, message.FormatAuto)
		if message.WellFormed(b, &m, err) && (err != nil || len(b) == 0 || b[0] != '<' || m.Timestamp == nil && m.Format == message.FormatRFC3164) {
			t.Fatalf("kept %q: %v", b, err)
		}
	})
}
