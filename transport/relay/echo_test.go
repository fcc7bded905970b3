package relay

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/edge-agent/edge-agent/transport/codec"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// echoSecret is a token distinctive enough that any fragment of it in a
// status or log is an echo.
const echoSecret = "Zq7-SECRET-TOKEN-wX93"

// secretFragments are pieces of echoSecret: none may show anywhere.
var secretFragments = []string{echoSecret, "Zq7", "SECRET", "TOKEN", "wX93"}

func assertNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, f := range secretFragments {
		if strings.Contains(text, f) {
			t.Errorf("%s echoes the token (%q): %s", where, f, text)
		}
	}
}

// TestTokenInWrongPlacesIsNotEchoed: a collector authenticated with its
// token sends that token again in every wrong place. Each request is
// refused, the refusal is described in last_error (so the operator sees
// what was wrong and where), and the token shows in no last_error, no
// totals and no log line.
func TestTokenInWrongPlacesIsNotEchoed(t *testing.T) {
	var logs syncBuffer
	dec, err := codec.NewDecoder(codec.ModePacket, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := startRelay(t, Config{
		Handler:      immediate,
		Decoder:      dec,
		MaxLineBytes: 512,
		Tokens:       []Token{{Name: "edge-a", Value: echoSecret}},
		Logger:       slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	p := authedAs(t, s, echoSecret)

	lastError := func() string {
		t.Helper()
		cs := s.Collectors()
		if len(cs) != 1 {
			t.Fatalf("collectors = %+v, want 1", cs)
		}
		return cs[0].LastError
	}
	n, n10 := strconv.Itoa(len(echoSecret)), strconv.Itoa(len(echoSecret)+10)
	cases := []struct {
		line, reply, want string // want: in last_error
	}{
		{echoSecret, "BAD_REQUEST", "request 1: BAD_REQUEST: unknown command: a line of " + n + " bytes"},
		{"__BATCH__:" + echoSecret + ":x", "INVALID_PARAM", "request 2: INVALID_PARAM: batch id of " + n + " bytes is not a decimal int64"},
		{"__BATCH__:" + echoSecret, "BAD_REQUEST", "request 3: BAD_REQUEST: batch line of " + n10 + " bytes has no ':'"},
		{"__COMMIT__:" + echoSecret, "INVALID_PARAM", "request 4: INVALID_PARAM: commit id of " + n + " bytes"},
		{"__AUTH__:" + echoSecret, "BAD_REQUEST", "request 5: BAD_REQUEST: __AUTH__ again"},
		{"HELLO " + echoSecret, "BAD_REQUEST", "request 6: BAD_REQUEST: unknown command"},
		{"__BATCH__:1:" + echoSecret, "DECODE_FAILED", "request 7: DECODE_FAILED: malformed packet: not a JSON envelope: syntax error at byte offset 1"},
		{`__BATCH__:2:{"payload":"aGk=","compression":"` + echoSecret + `"}`, "DECODE_FAILED", "request 8: DECODE_FAILED: unknown compression: a name of " + n + " bytes"},
		{`__BATCH__:3:{"payload":"aGk=","encryption":"` + echoSecret + `"}`, "DECODE_FAILED", "request 9: DECODE_FAILED: unknown encryption: a name of " + n + " bytes"},
		{`__BATCH__:4:{"payload":"aGk=","encryption":"aes_gcm","iv":"` + echoSecret + `"}`, "DECRYPT_FAILED", "request 10: DECRYPT_FAILED: aes_gcm packet: packet is encrypted but no key"},
		{`__BATCH__:5:{"payload":"` + echoSecret + `"}`, "DECODE_FAILED", "request 11: DECODE_FAILED: malformed packet: payload is not base64"},
	}
	for _, c := range cases {
		p.Send(c.line + "\n")
		p.Expect(c.reply)
		got := lastError()
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("after %q last_error = %q, want it to start %q", c.line, got, c.want)
		}
		assertNoSecret(t, "last_error", got)
	}
	// A line over MaxLineBytes, the token in it, ends the session.
	p.Send(strings.Repeat(echoSecret, 40) + "\n")
	p.Expect("BAD_REQUEST")
	p.ExpectEOF()

	// A second collector fails to authenticate with the token in a wrong
	// shape, and with an auth line over its bound.
	for _, line := range []string{"x" + echoSecret, "__AUTH__:" + echoSecret + "x", "__AUTH__:" + strings.Repeat(echoSecret, 300)} {
		q := dial(t, s)
		q.Send(line + "\n")
		q.Expect("AUTH_FAILED")
	}

	totals := s.Totals()
	if len(totals) != 1 || !strings.Contains(totals[0].LastError, "request line over the limit of 512 bytes") {
		t.Errorf("totals = %+v, want the over-long line as last error", totals)
	}
	for _, tt := range totals {
		assertNoSecret(t, "totals last_error", tt.LastError)
	}
	assertNoSecret(t, "log", logs.String())
	if !strings.Contains(logs.String(), "edgesocket batch does not decode") {
		t.Errorf("log lacks the decode failures: %s", logs.String())
	}
}
