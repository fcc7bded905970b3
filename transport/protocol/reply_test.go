package protocol

import (
	"strings"
	"testing"
	"time"
)

func TestParseReply(t *testing.T) {
	tests := []struct {
		line  string
		code  Code
		delay time.Duration
		value string
	}{
		{"ACK", CodeACK, 0, ""},
		{"  ACK\r\n", CodeACK, 0, ""},
		{"ACK:10", CodeACK, 0, "10"},
		{"RECEIVED", CodeReceived, 0, ""},
		{"RETRY", CodeRetry, 0, ""},
		{"QUEUE_FULL:250", CodeQueueFull, 250 * time.Millisecond, "250"},
		{"QUEUE_FULL: 40 ", CodeQueueFull, 40 * time.Millisecond, " 40"},
		{"QUEUE_FULL:abc", CodeQueueFull, 500 * time.Millisecond, "abc"},
		{"QUEUE_FULL:0", CodeQueueFull, 500 * time.Millisecond, "0"},
		{"QUEUE_FULL:-5", CodeQueueFull, 500 * time.Millisecond, "-5"},
		{"QUEUE_FULL:", CodeQueueFull, 500 * time.Millisecond, ""},
		{"QUEUE_FULL", CodeQueueFull, 500 * time.Millisecond, ""},
		{"QUEUE_FULL:99999999999999999999", CodeQueueFull, 500 * time.Millisecond, "99999999999999999999"},
		{"QUEUE_FULL:9223372036854775807", CodeQueueFull, MaxQueueFullDelayMillis * time.Millisecond, "9223372036854775807"},
		{"DECRYPT_FAILED", CodeDecryptFailed, 0, ""},
		{"DECODE_FAILED", CodeDecodeFailed, 0, ""},
		{"AUTH_FAILED", CodeAuthFailed, 0, ""},
		{"REJECTED", CodeRejected, 0, ""},
		{"BAD_REQUEST", CodeBadRequest, 0, ""},
		{"INVALID_PARAM", CodeInvalidParam, 0, ""},
		{"PENDING", CodePending, 0, ""},
		{"RESEND", CodeResend, 0, ""},
		{"received", CodeUnknown, 0, ""},
		{"RECEIVED:1", CodeUnknown, 0, ""},
		{"", CodeUnknown, 0, ""},
		{"WHAT", CodeUnknown, 0, ""},
	}
	for _, tt := range tests {
		r := ParseReply([]byte(tt.line))
		if r.Code != tt.code || r.Delay != tt.delay || r.Value != tt.value {
			t.Errorf("ParseReply(%q) = %+v, want code %v delay %v value %q", tt.line, r, tt.code, tt.delay, tt.value)
		}
	}
}

func TestReplyLineIsBounded(t *testing.T) {
	r := ParseReply([]byte(strings.Repeat("X", 5000)))
	if len(r.Line) > maxQuotedReply+3 {
		t.Fatalf("Line holds %d bytes", len(r.Line))
	}
}

func TestCodeString(t *testing.T) {
	if CodeQueueFull.String() != "QUEUE_FULL" || Code(99).String() != "UNKNOWN" {
		t.Fatal("Code.String")
	}
	if QueueFull(1500*time.Millisecond) != "QUEUE_FULL:1500" {
		t.Fatal("QueueFull")
	}
}

func FuzzParseReply(f *testing.F) {
	for _, s := range []string{"ACK", "QUEUE_FULL:10", "QUEUE_FULL:x", " RETRY\r", "ACK:5", ":", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r := ParseReply([]byte(line))
		if r.Code == CodeQueueFull {
			if r.Delay <= 0 || r.Delay > MaxQueueFullDelayMillis*time.Millisecond {
				t.Fatalf("delay %v out of range", r.Delay)
			}
		} else if r.Delay != 0 {
			t.Fatalf("delay %v on %v", r.Delay, r.Code)
		}
		if r.Code != CodeUnknown && r.Code != CodeACK && r.Code != CodeQueueFull && r.Code.String() != string(Trim([]byte(line))) {
			t.Fatalf("%q parsed as %v", line, r.Code)
		}
	})
}

func TestParseReplyDoesNotAllocate(t *testing.T) {
	line := []byte("RECEIVED\r")
	if n := testing.AllocsPerRun(100, func() { _ = ParseReply(line) }); n != 0 {
		t.Fatalf("ParseReply(RECEIVED) allocates %v times", n)
	}
}
