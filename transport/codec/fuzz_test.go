package codec

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte(""), uint8(0))
	f.Add([]byte(`{"payload":"line"}`), uint8(5))
	f.Add(bytes.Repeat([]byte("ab"), 300), uint8(11))
	all := combos()
	encoders := make([]*Encoder, len(all))
	for i, o := range all {
		encoders[i] = mustEncoder(f, o)
	}
	d := mustDecoder(f, ModePacket, testKey)
	f.Fuzz(func(t *testing.T, event []byte, pick uint8) {
		e := encoders[int(pick)%len(encoders)]
		wire, err := e.Encode(nil, event)
		if err != nil {
			t.Fatal(err)
		}
		back, err := d.Decode(wire)
		if err != nil {
			t.Fatalf("%s: %v", name(e.Options()), err)
		}
		if !bytes.Equal(back, event) {
			t.Fatalf("%s: round trip differs", name(e.Options()))
		}
	})
}

func FuzzDecodeGarbage(f *testing.F) {
	e := mustEncoder(f, Options{Mode: ModePacket, Compression: CompressionGzip, Encryption: EncryptionAESGCM, Key: testKey})
	w, _ := e.Encode(nil, []byte("seed"))
	f.Add(w)
	f.Add([]byte(`{"payload":"eJzLSM3JyQcABiwCFQ==","compression":"zlib"}`))
	f.Add([]byte(`{"payload":"H4sI","compression":"GZIP","encryption":"none","iv":null}`))
	f.Add([]byte(`{"payload":"","encryption":"aes_gcm","iv":"AAAAAAAAAAAAAAAA"}`))
	f.Add([]byte(`{`))
	d, err := NewDecoder(ModePacket, testKey, WithMaxDecodedSize(1<<20))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := d.Decode(in) // must not panic
		if err == nil && len(out) > 1<<20 {
			t.Fatalf("decoded %d bytes past the limit", len(out))
		}
		// Errors describe the packet, never quote it: their text is our
		// own printable ASCII, and no run of 12 input bytes shows in it.
		if err != nil {
			msg := err.Error()
			for i := 0; i < len(msg); i++ {
				if msg[i] < ' ' || msg[i] > '~' {
					t.Fatalf("error holds byte 0x%02x: %q", msg[i], msg)
				}
			}
			for i := 0; i+12 <= len(in); i++ {
				if strings.Contains(msg, string(in[i:i+12])) {
					t.Fatalf("error %q quotes input bytes %q", msg, in[i:i+12])
				}
			}
		}
	})
}

// FuzzEnvelopeFastPath checks that the fast envelope parser agrees with
// encoding/json whenever it accepts an input.
func FuzzEnvelopeFastPath(f *testing.F) {
	f.Add([]byte(`{"version":1,"payload":"aGk=","compression":"none","encryption":"none","iv":null}`))
	f.Add([]byte(`{"version":1,"payload":"aGk=","compression":"gzip","encryption":"aes_gcm","iv":"AAAAAAAAAAAAAAAA"}`))
	f.Add([]byte(`{"version":1,"payload":"a\u0041","compression":"none","encryption":"none","iv":null}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, ok := parseCanonical(in)
		if !ok {
			return
		}
		var env envelope
		if err := json.Unmarshal(in, &env); err != nil {
			t.Fatalf("fast path accepted invalid JSON %q: %v", in, err)
		}
		slow := env.fields()
		if !bytes.Equal(fast.payload, slow.payload) || !bytes.Equal(fast.compression, slow.compression) ||
			!bytes.Equal(fast.encryption, slow.encryption) || !bytes.Equal(fast.iv, slow.iv) ||
			fast.hasPayload != slow.hasPayload || fast.hasIV != slow.hasIV {
			t.Fatalf("fast %+v != json %+v for %q", fast, slow, in)
		}
	})
}
