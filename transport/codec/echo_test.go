package codec

import (
	"strings"
	"testing"
)

// TestDecodeErrorsQuoteNothing: a secret put in any field of a PACKET
// envelope, or as the bytes a JSON error would quote, does not reach the
// error text (decode errors go to status and logs).
func TestDecodeErrorsQuoteNothing(t *testing.T) {
	const secret = "S3CR3T4242"
	d := mustDecoder(t, ModePacket, testKey)
	for _, in := range []string{
		secret,
		"4242424242",
		`{"payload":4242424242}`,
		`{"payload":"aGk=","compression":"` + secret + `"}`,
		`{"payload":"aGk=","encryption":"` + secret + `"}`,
		`{"payload":"` + secret + `!"}`,
		`{"payload":"aGk=","encryption":"aes_gcm","iv":"` + secret + `"}`,
		`{"version":"` + secret + `"}`,
		`{"payload":"aGk=",` + secret + `}`,
		"{\"payload\":\"\x00" + secret + "\xff\"}",
	} {
		_, err := d.Decode([]byte(in))
		if err == nil {
			t.Fatalf("Decode(%q) accepted", in)
		}
		if msg := err.Error(); strings.Contains(msg, "4242") || strings.Contains(msg, "S3CR3T") {
			t.Errorf("Decode(%q) error echoes the packet: %v", in, err)
		}
	}
}
