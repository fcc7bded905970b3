package relay

import (
	"bytes"
	"testing"

	"github.com/edge-agent/edge-agent/transport/protocol"
)

func TestAuthToken(t *testing.T) {
	tests := []struct{ line, want string }{
		{"__AUTH__:tok", "tok"},
		{"tok", "tok"},
		{"__AUTH__: tok \t", "tok"},
		{"__AUTH__:", ""},
		{"__AUTH_:tok", "__AUTH_:tok"},
		{"  __AUTH__:tok", "__AUTH__:tok"},
		{"__AUTH__:__AUTH__:tok", "__AUTH__:tok"},
	}
	for _, tt := range tests {
		if got := string(authToken([]byte(tt.line))); got != tt.want {
			t.Errorf("authToken(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

// FuzzAuthToken: the first-line parser never panics, returns a part of
// the line (no copy, nothing invented), without surrounding blanks, and
// gives back every valid token it was sent with or without the prefix.
func FuzzAuthToken(f *testing.F) {
	for _, s := range []string{"__AUTH__:tok", "tok", "", "__AUTH__:", "__AUTH__", " \t", "\x00\xff", "__AUTH__:a b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got := authToken(line)
		if len(got) > 0 && !bytes.Contains(line, got) {
			t.Fatalf("authToken(%q) = %q, not a part of the line", line, got)
		}
		if !bytes.Equal(got, protocol.Trim(got)) {
			t.Fatalf("authToken(%q) = %q keeps surrounding blanks", line, got)
		}
		if protocol.CheckToken(string(line)) == nil && !bytes.HasPrefix(line, []byte(protocol.PrefixAuth)) {
			if tok := protocol.Trim(line); !bytes.Equal(authToken([]byte(protocol.PrefixAuth+string(line))), tok) {
				t.Fatalf("a token %q behind the prefix does not come back", line)
			}
		}
		ts := newTokens([]Token{{Name: "n", Value: string(got)}})
		if name, ok := ts.match(got); !ok || name != "n" {
			t.Fatalf("the token parsed does not match itself")
		}
	})
}
