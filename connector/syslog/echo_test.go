package syslog

import (
	"github.com/edge-agent/edge-agent/connector/syslog/message"
	"strings"
	"testing"
)

// parseErrorShapes are every parse error text with its digits taken out:
// an error that is one of them holds nothing of the message but numbers
// (positions, lengths, limits).
var parseErrorShapes = func() map[string]bool {
	texts := []string{
		"no <PRI> at the start",
		"<PRI> is not a number from 0 to 191",
		"not RFC 5424: no version after <PRI>",
		"RFC 5424 header field TIMESTAMP: 1 bytes, not RFC 3339",
		"RFC 5424 structured data: no space after it",
		"RFC 5424 structured data: missing (message ends early)",
		"RFC 5424 structured data: element 1 not closed by ]",
		"RFC 5424 structured data: element 1: want a space or ] after its name or a parameter",
		`RFC 5424 structured data: element 1 parameter 1: want ="value"`,
		`RFC 5424 structured data: element 1 parameter 1: value not closed by "`,
		"RFC 5424 structured data: want - or [",
		"RFC 5424 structured data: SD-ID must be 1 to 32 printable ASCII bytes",
		"RFC 5424 structured data: PARAM-NAME must be 1 to 32 printable ASCII bytes",
	}
	for _, f := range []string{"TIMESTAMP", "HOSTNAME", "APP-NAME", "PROCID", "MSGID"} {
		texts = append(texts,
			"RFC 5424 header field "+f+": missing (message ends early)",
			"RFC 5424 header field "+f+": longer than 1 bytes",
			"RFC 5424 header field "+f+": byte 1 of 1 is not printable ASCII")
	}
	m := make(map[string]bool, len(texts))
	for _, t := range texts {
		m[withoutDigits(t)] = true
	}
	return m
}()

func withoutDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, s)
}

// checkErrorShape fails when a parse error is not one of the fixed texts:
// it would then quote the message.
func checkErrorShape(t *testing.T, in []byte, err error) {
	t.Helper()
	if err != nil && !parseErrorShapes[withoutDigits(err.Error())] {
		t.Fatalf("parse error %q of %q is not one of the content-free texts", err, in)
	}
}

// TestParseErrorsQuoteNothing: a secret in each place where a message can
// fail to parse does not show in the error.
func TestParseErrorsQuoteNothing(t *testing.T) {
	const secret = "Kp4SECRETx"
	for _, in := range []string{
		"<13>1 " + secret + " h a - - -",
		"<13>1 - h" + secret + "\x01 a - - -",
		"<13>1 - h a - - [" + secret + " k=\"v\"",
		"<13>1 - h a - - [id " + secret + "]",
		"<13>1 - h a - - [id k=\"v\"" + secret + "]",
		"<13>1 - h a - - [id k=\"" + secret,
		"<13>1 - h a - - " + secret,
		"<13>1 - h a - - -" + secret,
		"<13>1 - h a - - [" + strings.Repeat(secret, 5) + "]",
		"<" + secret + ">1 - - - - - -",
	} {
		for _, format := range []string{message.FormatAuto, message.FormatRFC5424} {
			_, err := message.Parse([]byte(in), format)
			if err == nil {
				t.Fatalf("Parse(%q, %s) accepted", in, format)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("Parse(%q, %s) error echoes the message: %v", in, format, err)
			}
			checkErrorShape(t, []byte(in), err)
		}
	}
}

// checkFrameErrorShape fails when a framing error is not one of the fixed
// texts (which end the connection and are logged).
func checkFrameErrorShape(t *testing.T, in []byte, err error) {
	t.Helper()
	switch withoutDigits(err.Error()) {
	case "EOF", "stream ended inside an octet-counted frame", "too many frames",
		"malformed octet count: a leading zero",
		"malformed octet count: a byte that is neither a digit nor a space after  digits",
		"octet count larger than max-message-bytes: over  after  digits":
		return
	}
	t.Fatalf("framing error %q of %q is not one of the content-free texts", err, in)
}

// TestFrameErrorsQuoteNothing: a framing error names no byte it read.
func TestFrameErrorsQuoteNothing(t *testing.T) {
	for _, in := range []string{"12S <13>x", "0S", "99999999999 x", "1S"} {
		got := readFrames(strings.NewReader(in), 64)
		if got.err == nil || strings.Contains(got.err.Error(), "S") || strings.Contains(got.err.Error(), "0x") {
			t.Errorf("frames of %q end with %v, want an error quoting nothing", in, got.err)
		}
		checkFrameErrorShape(t, []byte(in), got.err)
	}
}
