package enginemodel

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/protocol"
)

const testToken = "tok"

func newTestSession(t *testing.T, src *Source) *Session {
	t.Helper()
	ss := NewSession(src, SessionConfig{Token: testToken})
	if reply, keep := ss.HandleLine([]byte("__AUTH__:" + testToken)); reply != "ACK" || !keep {
		t.Fatalf("auth: %q %v", reply, keep)
	}
	return ss
}

func TestAuth(t *testing.T) {
	for _, tt := range []struct {
		line  string
		reply string
		keep  bool
	}{
		{"__AUTH__:" + testToken, "ACK", true},
		{testToken, "ACK", true}, // a bare token line
		{"__AUTH__:wrong", "AUTH_FAILED", false},
		{"wrong", "AUTH_FAILED", false},
		{"", "AUTH_FAILED", false},
		{"__AUTH__:" + testToken + " ", "AUTH_FAILED", false}, // the line is the token, as sent
		{"__BATCH__:1:x", "AUTH_FAILED", false},
	} {
		ss := NewSession(newTestSource(t, SourceConfig{}), SessionConfig{Token: testToken})
		reply, keep := ss.HandleLine([]byte(tt.line))
		if reply != tt.reply || keep != tt.keep || ss.Authenticated() != tt.keep {
			t.Errorf("%q: %q keep=%v, want %q keep=%v", tt.line, reply, keep, tt.reply, tt.keep)
		}
	}
	ss := NewSession(newTestSource(t, SourceConfig{}), SessionConfig{Token: testToken})
	if got := ss.AuthTimedOut(); got != "AUTH_FAILED" {
		t.Errorf("auth timeout reply %q", got)
	}
}

// Wire parsing after auth.
func TestRequestParsing(t *testing.T) {
	for _, tt := range []struct{ line, reply string }{
		{"__COMMIT__:0", "INVALID_PARAM"},
		{"__COMMIT__:-1", "INVALID_PARAM"},
		{"__COMMIT__:abc", "INVALID_PARAM"},
		{"__COMMIT__:1:x", "INVALID_PARAM"},
		{"__COMMIT__:", "INVALID_PARAM"},
		{"__BATCH__:x:p", "INVALID_PARAM"},
		{"__BATCH__:0:p", "INVALID_PARAM"},
		{"__BATCH__:-3:p", "INVALID_PARAM"},
		{"__BATCH__:7", "BAD_REQUEST"}, // no payload separator
		{"hello", "BAD_REQUEST"},
		{"", "BAD_REQUEST"},
		{"__AUTH__:" + testToken, "BAD_REQUEST"}, // second auth
		{"__BATCH__:7:", "RECEIVED"},             // an empty payload is a record
		{"__BATCH__:8:a:b:c", "RECEIVED"},
		{"__COMMIT__:8", "PENDING"},
	} {
		ss := newTestSession(t, newTestSource(t, SourceConfig{}))
		if tt.line == "__COMMIT__:8" {
			ss.HandleLine([]byte("__BATCH__:8:x"))
		}
		reply, keep := ss.HandleLine([]byte(tt.line))
		if reply != tt.reply || !keep {
			t.Errorf("%q: %q keep=%v, want %q", tt.line, reply, keep, tt.reply)
		}
	}
}

func TestPayloadKeptVerbatim(t *testing.T) {
	src := newTestSource(t, SourceConfig{})
	ss := newTestSession(t, src)
	line := []byte("__BATCH__:3:héllo:{\"a\":1}")
	ss.HandleLine(line)
	copy(line, "XXXXXXXXXXXXXXXXXXXXXXXX") // the caller reuses its buffer
	r, ok := src.Poll()
	if !ok || r.BatchID != 3 || string(r.Payload) != "héllo:{\"a\":1}" {
		t.Fatalf("record %+v %v", r, ok)
	}
}

func TestSessionObserve(t *testing.T) {
	src := newTestSource(t, SourceConfig{})
	var got []string
	ss := NewSession(src, SessionConfig{Token: testToken, Observe: func(k protocol.Kind, id int64, reply string) {
		got = append(got, strings.Join([]string{[]string{"?", "auth", "batch", "commit"}[k], strconv.FormatInt(id, 10), reply}, " "))
	}})
	for _, l := range []string{"tok", "__BATCH__:2:x", "__COMMIT__:2", "nope"} {
		ss.HandleLine([]byte(l))
	}
	want := "batch 2 RECEIVED|commit 2 PENDING|? 0 BAD_REQUEST"
	if strings.Join(got, "|") != want {
		t.Fatalf("observed %q, want %q", strings.Join(got, "|"), want)
	}
}

// A session of a reader that was restored or reset gets no more replies.
func TestSessionGoneAfterReset(t *testing.T) {
	src := newTestSource(t, SourceConfig{})
	ss := newTestSession(t, src)
	before := NewSession(src, SessionConfig{Token: testToken}) // not yet authenticated
	src.Reset()
	select {
	case <-ss.Gone():
	default:
		t.Fatal("Gone not closed by Reset")
	}
	if reply, keep := ss.HandleLine([]byte("__BATCH__:1:x")); reply != "" || keep {
		t.Fatalf("stale session answered %q keep=%v", reply, keep)
	}
	if reply, keep := before.HandleLine([]byte(testToken)); reply != "" || keep {
		t.Fatalf("stale session authenticated: %q keep=%v", reply, keep)
	}
	if f := src.Figures(); f.LastReceived != 0 {
		t.Fatalf("stale session recorded a batch: %+v", f)
	}
}

// transcriptStep is one request and its reply; advance > 0 first lets
// that much model time pass.
type transcriptStep struct {
	advance time.Duration
	req     string
	reply   string
}

// goldenTranscript is a session of the engine as observed, with checkpoints every
// 2 s; the payload text is arbitrary UTF-8.
func goldenTranscript() []transcriptStep {
	steps := []transcriptStep{
		{0, "__AUTH__:" + testToken, "ACK"},
		{0, "__COMMIT__:2", "RETRY"},
	}
	for id := 2; id <= 11; id++ {
		steps = append(steps, transcriptStep{0, "__BATCH__:" + strconv.Itoa(id) + ":{\"msg\":\"zé " + strconv.Itoa(id) + "\"}", "RECEIVED"})
	}
	return append(steps,
		transcriptStep{0, "__COMMIT__:11", "PENDING"},
		transcriptStep{0, "__COMMIT__:1", "ACK:1"},
		transcriptStep{0, "__COMMIT__:50", "RETRY"},
		transcriptStep{0, "__COMMIT__:0", "INVALID_PARAM"},
		transcriptStep{0, "__COMMIT__:-1", "INVALID_PARAM"},
		transcriptStep{0, "__COMMIT__:abc", "INVALID_PARAM"},
		transcriptStep{0, "__BATCH__:x:p", "INVALID_PARAM"},
		transcriptStep{0, "__BATCH__:0:p", "INVALID_PARAM"},
		transcriptStep{0, "__BATCH__:7", "BAD_REQUEST"},
		transcriptStep{0, "hello", "BAD_REQUEST"},
		transcriptStep{0, "__AUTH__:" + testToken, "BAD_REQUEST"},
		transcriptStep{0, "", "BAD_REQUEST"},
		transcriptStep{1800 * time.Millisecond, "__COMMIT__:11", "ACK:11"},
		transcriptStep{0, "__BATCH__:11:{\"msg\":\"again\"}", "RECEIVED"},
		transcriptStep{0, "__COMMIT__:11", "ACK:11"},
	)
}

func newTranscriptJob(t *testing.T) *Job {
	t.Helper()
	j, err := NewJob(JobConfig{CheckpointInterval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The session runs some 200 ms into the first interval, so the
	// first checkpoint falls 1.8 s after the PENDING reply.
	if err := j.Advance(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	return j
}

// The observed session, line for line and byte for byte.
func TestGoldenTranscript(t *testing.T) {
	j := newTranscriptJob(t)
	ss := NewSession(j.Source(), SessionConfig{Token: testToken})
	var want, got bytes.Buffer
	for _, st := range goldenTranscript() {
		if st.advance > 0 {
			if err := j.Advance(st.advance); err != nil {
				t.Fatal(err)
			}
		}
		reply, keep := ss.HandleLine([]byte(st.req))
		if !keep {
			t.Fatalf("%q closed the session", st.req)
		}
		want.WriteString(st.reply + "\n")
		got.WriteString(reply + "\n")
		if reply != st.reply {
			t.Errorf("%q: %q, want %q", st.req, reply, st.reply)
		}
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("transcript differs:\n%s\nwant\n%s", got.String(), want.String())
	}
	// No dedup: id 11 is committed twice once the next checkpoint runs.
	if err := j.Advance(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range j.Committed() {
		if c.BatchID == 11 {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("id 11 committed %d times, want 2", n)
	}
}

// FuzzSessionLine: any line gets exactly one one-line reply (or, before
// auth, a refusal) and never panics.
func FuzzSessionLine(f *testing.F) {
	for _, st := range goldenTranscript() {
		f.Add([]byte(st.req))
	}
	f.Add([]byte("__BATCH__:9223372036854775807:x"))
	f.Add([]byte("__COMMIT__:9223372036854775808"))
	f.Add([]byte("__BATCH__:+5:x"))
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.Map(func(r rune) rune {
			if r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, line)
		src, err := NewSource(SourceConfig{QueueCapacity: 4})
		if err != nil {
			t.Fatal(err)
		}
		ss := NewSession(src, SessionConfig{Token: testToken})
		if reply, keep := ss.HandleLine(line); reply == "" || (!keep && reply != "AUTH_FAILED") {
			t.Fatalf("first line %q: %q keep=%v", line, reply, keep)
		}
		if !ss.Authenticated() {
			ss.HandleLine([]byte(testToken))
		}
		for range 6 { // past the queue's mark too
			reply, keep := ss.HandleLine(line)
			if reply == "" || !keep || strings.ContainsAny(reply, "\r\n") {
				t.Fatalf("%q: %q keep=%v", line, reply, keep)
			}
			if protocol.ParseReply([]byte(reply)).Code == protocol.CodeUnknown {
				t.Fatalf("%q: reply %q is no engine word", line, reply)
			}
			src.Poll()
		}
	})
}
