package protocol

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestAppendAuth(t *testing.T) {
	if got := string(AppendAuth([]byte("x"), "tok")); got != "x__AUTH__:tok\n" {
		t.Fatalf("AppendAuth = %q", got)
	}
}

func TestAppendBatch(t *testing.T) {
	got, err := AppendBatch(nil, 42, []byte(`{"a":"b:c"}`))
	if err != nil || string(got) != "__BATCH__:42:{\"a\":\"b:c\"}\n" {
		t.Fatalf("AppendBatch = %q, %v", got, err)
	}
	for _, id := range []int64{0, -1, math.MinInt64} {
		dst, err := AppendBatch([]byte("keep"), id, []byte("p"))
		if !errors.Is(err, ErrBadBatchID) || string(dst) != "keep" {
			t.Errorf("id %d: %q, %v", id, dst, err)
		}
		if err != nil && err.Error() != "batch "+strconv.FormatInt(id, 10)+": batchId must be positive" {
			t.Errorf("message %q", err)
		}
	}
	for _, p := range []string{"a\nb", "a\r", "\n"} {
		if _, err := AppendBatch(nil, 1, []byte(p)); !errors.Is(err, ErrLineBreak) {
			t.Errorf("payload %q: err %v", p, err)
		}
		if err := CheckBatch(1, []byte(p)); !errors.Is(err, ErrLineBreak) || err.Error() != "batch 1: payload contains a line break" {
			t.Errorf("CheckBatch payload %q: err %v", p, err)
		}
	}
}

// A batch CheckBatch accepts is framed by AppendCheckedBatch exactly as
// AppendBatch frames it.
func TestAppendCheckedBatch(t *testing.T) {
	for _, tc := range []struct {
		id      int64
		payload string
	}{{1, ""}, {42, `{"a":"b:c"}`}, {math.MaxInt64, "\t x\x00 ✓"}} {
		if err := CheckBatch(tc.id, []byte(tc.payload)); err != nil {
			t.Fatalf("CheckBatch(%d, %q): %v", tc.id, tc.payload, err)
		}
		want, _ := AppendBatch([]byte("pre"), tc.id, []byte(tc.payload))
		if got := AppendCheckedBatch([]byte("pre"), tc.id, []byte(tc.payload)); string(got) != string(want) {
			t.Errorf("AppendCheckedBatch(%d, %q) = %q, want %q", tc.id, tc.payload, got, want)
		}
	}
}

func TestAppendCommit(t *testing.T) {
	got, err := AppendCommit(nil, 7)
	if err != nil || string(got) != "__COMMIT__:7\n" {
		t.Fatalf("AppendCommit = %q, %v", got, err)
	}
	if _, err := AppendCommit(nil, 0); !errors.Is(err, ErrBadBatchID) {
		t.Fatalf("AppendCommit(0) err = %v", err)
	}
}

func TestCheckToken(t *testing.T) {
	for tok, ok := range map[string]bool{"t": true, "": false, "a\nb": false, "a\r": false} {
		if err := CheckToken(tok); (err == nil) != ok {
			t.Errorf("CheckToken(%q) = %v", tok, err)
		}
	}
}

func TestParseRequest(t *testing.T) {
	tests := []struct {
		line    string
		kind    Kind
		id      int64
		payload string
		reply   string // "" = no error
	}{
		{"__BATCH__:42:payload-data", KindBatch, 42, "payload-data", ""},
		{"__BATCH__:1:", KindBatch, 1, "", ""},
		{"__BATCH__:7:a:b:c", KindBatch, 7, "a:b:c", ""},
		{"__BATCH__:+7:x", KindBatch, 7, "x", ""},
		{"__BATCH__:9223372036854775807:x", KindBatch, math.MaxInt64, "x", ""},
		{"__BATCH__:1", KindUnknown, 0, "", ReplyBadRequest},
		{"__BATCH__:", KindUnknown, 0, "", ReplyBadRequest},
		{"__BATCH__:notanumber:data", KindUnknown, 0, "", ReplyInvalidParam},
		{"__BATCH__::data", KindUnknown, 0, "", ReplyInvalidParam},
		{"__BATCH__:0:data", KindUnknown, 0, "", ReplyInvalidParam},
		{"__BATCH__:-3:data", KindUnknown, 0, "", ReplyInvalidParam},
		{"__BATCH__:9223372036854775808:x", KindUnknown, 0, "", ReplyInvalidParam},
		{"__COMMIT__:5", KindCommit, 5, "", ""},
		{"__COMMIT__:abc", KindUnknown, 0, "", ReplyInvalidParam},
		{"__COMMIT__:0", KindUnknown, 0, "", ReplyInvalidParam},
		{"__COMMIT__:-1", KindUnknown, 0, "", ReplyInvalidParam},
		{"__AUTH__:tok", KindAuth, 0, "tok", ""},
		{"HELLO", KindUnknown, 0, "", ReplyBadRequest},
		{"", KindUnknown, 0, "", ReplyBadRequest},
		{"__batch__:1:x", KindUnknown, 0, "", ReplyBadRequest},
	}
	for _, tt := range tests {
		req, err := ParseRequest([]byte(tt.line))
		if tt.reply != "" {
			var re *RequestError
			if !errors.As(err, &re) || re.Reply != tt.reply {
				t.Errorf("ParseRequest(%q) err = %v, want %s", tt.line, err, tt.reply)
			}
			if err != nil && !reasonIsShapeOnly(re.Reason) {
				t.Errorf("ParseRequest(%q) reason %q is not one of the content-free templates", tt.line, re.Reason)
			}
			continue
		}
		if err != nil || req.Kind != tt.kind || req.BatchID != tt.id || string(req.Payload) != tt.payload {
			t.Errorf("ParseRequest(%q) = %+v, %v", tt.line, req, err)
		}
	}
}

// TestRequestErrorQuotesNothing: a secret sent in any wrong place of a
// request line does not reach the error.
func TestRequestErrorQuotesNothing(t *testing.T) {
	const secret = "s3cr3t-T0KEN-4242"
	for _, line := range []string{
		secret,
		"__BATCH__:" + secret + ":x",
		"__BATCH__:" + secret,
		"__COMMIT__:" + secret,
		"__COMMIT__:-4242",
		"__BATCH__:-4242:x",
		"HELLO " + secret,
		"\x00" + secret + "\xff",
	} {
		_, err := ParseRequest([]byte(line))
		if err == nil {
			t.Fatalf("ParseRequest(%q) accepted", line)
		}
		if strings.Contains(err.Error(), "4242") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("ParseRequest(%q) error echoes the line: %v", line, err)
		}
	}
}

// reasonIsShapeOnly reports whether a reason, its numbers taken out, is
// one of ParseRequest's fixed templates: then it holds nothing of the
// line but lengths.
func reasonIsShapeOnly(reason string) bool {
	shape := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, reason)
	switch shape {
	case "batch line of  bytes has no ':' between id and payload",
		"batch id of  bytes is not a decimal int",
		"commit id of  bytes is not a decimal int",
		"batch id is not positive",
		"commit id is not positive",
		"unknown command: a line of  bytes with no known prefix":
		return true
	}
	return false
}

func FuzzParseRequest(f *testing.F) {
	f.Add(int64(1), "payload", "__BATCH__:1:x")
	f.Add(int64(42), "a:b", "__COMMIT__:9")
	f.Add(int64(-1), "", "__BATCH__:abc")
	f.Fuzz(func(t *testing.T, id int64, payload, garbage string) {
		// Garbage never panics and errors carry a reply word.
		if _, err := ParseRequest([]byte(garbage)); err != nil {
			var re *RequestError
			if !errors.As(err, &re) || (re.Reply != ReplyBadRequest && re.Reply != ReplyInvalidParam) {
				t.Fatalf("%q: %v", garbage, err)
			}
			// ...and nothing of the line but its lengths.
			if !reasonIsShapeOnly(re.Reason) {
				t.Fatalf("%q: reason %q quotes the line", garbage, re.Reason)
			}
		}
		// What AppendBatch writes, ParseRequest reads back.
		line, err := AppendBatch(nil, id, []byte(payload))
		if err != nil {
			if id > 0 && CheckLine([]byte(payload)) == nil {
				t.Fatalf("AppendBatch(%d, %q): %v", id, payload, err)
			}
			return
		}
		req, err := ParseRequest(line[:len(line)-1])
		if err != nil || req.Kind != KindBatch || req.BatchID != id || string(req.Payload) != payload {
			t.Fatalf("round trip of %q: %+v, %v", line, req, err)
		}
	})
}
