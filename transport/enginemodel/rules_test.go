package enginemodel

import (
	"errors"
	"fmt"
	"testing"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

func TestAuthenticates(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{"__AUTH__:tok", true},
		{"tok", true}, // the engine takes the whole line without the prefix
		{"__AUTH__:tok ", false},
		{"__AUTH__:to", false},
		{"__AUTH__:", false},
		{"", false},
		{"__auth__:tok", false},
	}
	for _, tt := range tests {
		if got := authenticates([]byte(tt.line), "tok"); got != tt.want {
			t.Errorf("authenticates(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

func TestRequestAndDecodeReplies(t *testing.T) {
	_, perr := protocol.ParseRequest([]byte("__BATCH__:x:payload"))
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"bad batch id", requestReply(perr), protocol.ReplyInvalidParam},
		{"unknown error", requestReply(errors.New("boom")), protocol.ReplyBadRequest},
		{"wrong key", decodeReply(fmt.Errorf("x: %w", codec.ErrDecrypt)), protocol.ReplyDecryptFailed},
		{"no key", decodeReply(codec.ErrKeyMissing), protocol.ReplyDecryptFailed},
		{"not encrypted", decodeReply(codec.ErrNotEncrypted), protocol.ReplyDecryptFailed},
		{"malformed", decodeReply(codec.ErrMalformed), protocol.ReplyDecodeFailed},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
