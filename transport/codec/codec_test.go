package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

var testKey = bytes.Repeat([]byte{7}, KeySize)

// combos lists every PACKET option set the engine understands, plus the
// ChaCha20 extra.
func combos() []Options {
	var out []Options
	for c := CompressionNone; c <= CompressionDeflate; c++ {
		for e := EncryptionNone; e <= EncryptionChaCha20Poly1305; e++ {
			o := Options{Mode: ModePacket, Compression: c, Level: DefaultLevel, Encryption: e}
			if e != EncryptionNone {
				o.Key = testKey
			}
			out = append(out, o)
		}
	}
	return out
}

func name(o Options) string { return o.Compression.String() + "+" + o.Encryption.String() }

func mustEncoder(t testing.TB, o Options) *Encoder {
	t.Helper()
	e, err := NewEncoder(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustDecoder(t testing.TB, m Mode, key []byte) *Decoder {
	t.Helper()
	d, err := NewDecoder(m, key)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRawIsVerbatim(t *testing.T) {
	e := mustEncoder(t, Options{Key: []byte("ignored in raw")})
	got, err := e.Encode([]byte("pre:"), []byte(`{"a":1}`))
	if err != nil || string(got) != `pre:{"a":1}` {
		t.Fatalf("Encode = %q, %v", got, err)
	}
	d := mustDecoder(t, ModeRaw, nil)
	for _, in := range []string{"", "anything at all", "{"} {
		out, err := d.Decode([]byte(in))
		if err != nil || string(out) != in {
			t.Fatalf("Decode(%q) = %q, %v", in, out, err)
		}
	}
}

func TestEnvelopeMatchesJavaAgent(t *testing.T) {
	e := mustEncoder(t, Options{Mode: ModePacket})
	got, err := e.Encode(nil, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"payload":"aGVsbG8=","compression":"none","encryption":"none","iv":null}`
	if string(got) != want {
		t.Fatalf("envelope\n got %s\nwant %s", got, want)
	}
}

func TestEncryptedEnvelopeShape(t *testing.T) {
	e := mustEncoder(t, Options{Mode: ModePacket, Compression: CompressionGzip, Encryption: EncryptionAESGCM, Key: testKey})
	got, err := e.Encode(nil, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	// Field order is part of the contract: decode into an ordered list.
	dec := json.NewDecoder(bytes.NewReader(got))
	var keys []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(keys, ",") != "version,payload,compression,encryption,iv" {
		t.Fatalf("field order %v", keys)
	}
	var env struct{ Compression, Encryption, IV string }
	if err := json.Unmarshal(got, &env); err != nil {
		t.Fatal(err)
	}
	iv, err := base64.StdEncoding.DecodeString(env.IV)
	if err != nil || len(iv) != 12 || env.Compression != "gzip" || env.Encryption != "aes_gcm" {
		t.Fatalf("envelope %s", got)
	}
	again, _ := e.Encode(nil, []byte("hello"))
	if bytes.Equal(again, got) {
		t.Fatal("two encryptions of one event are identical: the IV is not fresh")
	}
}

// Every level writes a stream the one decoder reads: the level is not
// recorded anywhere the receiver looks.
func TestRoundTripEveryLevel(t *testing.T) {
	// Words in a scrambled order: matches at many distances, where the
	// levels' search depths differ.
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "status=200", "user=42"}
	var ev []byte
	for i, x := 0, uint32(7); i < 4000; i++ {
		x = x*1664525 + 1013904223
		ev = append(ev, words[x>>28%uint32(len(words))]...)
		ev = append(ev, ' ')
	}
	d := mustDecoder(t, ModePacket, testKey)
	for c := CompressionGzip; c <= CompressionDeflate; c++ {
		lo, hi, ok := c.Levels()
		if !ok {
			t.Fatalf("%s has no levels", c)
		}
		sizes := map[int]int{}
		for l := lo; l <= hi; l++ {
			wire, err := mustEncoder(t, Options{Mode: ModePacket, Compression: c, Level: l}).Encode(nil, ev)
			if err != nil {
				t.Fatalf("%s level %d: %v", c, l, err)
			}
			back, err := d.Decode(wire)
			if err != nil || !bytes.Equal(back, ev) {
				t.Fatalf("%s level %d: round trip: %v", c, l, err)
			}
			sizes[l] = len(wire)
		}
		if sizes[hi] >= sizes[lo] {
			t.Errorf("%s: level %d wrote %d bytes, no fewer than level %d (%d): is the level applied?", c, hi, sizes[hi], lo, sizes[lo])
		}
	}
	if _, _, ok := CompressionNone.Levels(); ok {
		t.Error("none claims compression levels")
	}
}

func TestRoundTripEveryCombination(t *testing.T) {
	events := [][]byte{
		{},
		[]byte("x"),
		[]byte(`{"_index":0,"_file":"/var/log/app.log","_line":1,"_offset":42,"_ts":1700000000000,"payload":"hello: world"}`),
		bytes.Repeat([]byte("0123456789abcdef"), 4096),
		{0, 0xff, 0xfe, '\n', '\r', 0x80},
	}
	for _, o := range combos() {
		t.Run(name(o), func(t *testing.T) {
			e := mustEncoder(t, o)
			d := mustDecoder(t, ModePacket, testKey)
			for _, ev := range events {
				wire, err := e.Encode(nil, ev)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.ContainsAny(wire, "\r\n") {
					t.Fatal("wire payload holds a line break")
				}
				back, err := d.Decode(wire)
				if err != nil {
					t.Fatalf("decode %s: %v", wire, err)
				}
				if !bytes.Equal(back, ev) {
					t.Fatalf("round trip changed %d bytes into %d", len(ev), len(back))
				}
			}
		})
	}
}

func TestDecoderAcceptsEngineSpellings(t *testing.T) {
	e := mustEncoder(t, Options{Mode: ModePacket, Compression: CompressionZlib, Encryption: EncryptionAESGCM, Key: testKey})
	wire, _ := e.Encode(nil, []byte("hi"))
	upper := strings.NewReplacer(`"zlib"`, `"ZLIB"`, `"aes_gcm"`, `"AES_GCM"`).Replace(string(wire))
	// Java's decoder also accepts base64 without padding.
	var env map[string]any
	_ = json.Unmarshal([]byte(upper), &env)
	env["payload"] = strings.TrimRight(env["payload"].(string), "=")
	unpadded, _ := json.Marshal(env)
	d := mustDecoder(t, ModePacket, testKey)
	for _, in := range []string{upper, string(unpadded)} {
		out, err := d.Decode([]byte(in))
		if err != nil || string(out) != "hi" {
			t.Fatalf("Decode(%s) = %q, %v", in, out, err)
		}
	}
	// Blank compression and encryption mean none.
	out, err := d.Decode([]byte(`{"version":1,"payload":"aGk=","compression":"","encryption":""}`))
	if err != nil || string(out) != "hi" {
		t.Fatalf("blank names: %q, %v", out, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	aes := mustEncoder(t, Options{Mode: ModePacket, Compression: CompressionGzip, Encryption: EncryptionAESGCM, Key: testKey})
	sealed, _ := aes.Encode(nil, []byte("secret"))
	gz := mustEncoder(t, Options{Mode: ModePacket, Compression: CompressionGzip})
	gzWire, _ := gz.Encode(nil, []byte("hello hello hello"))

	var env map[string]any
	_ = json.Unmarshal(sealed, &env)
	with := func(k string, v any) []byte {
		m := map[string]any{}
		for kk, vv := range env {
			m[kk] = vv
		}
		m[k] = v
		b, _ := json.Marshal(m)
		return b
	}
	otherKey := bytes.Repeat([]byte{9}, KeySize)
	tests := []struct {
		name    string
		key     []byte
		in      []byte
		want    error
		decrypt bool
	}{
		{"garbage", testKey, []byte("not json at all"), ErrMalformed, false},
		{"truncated", testKey, sealed[:len(sealed)/2], ErrMalformed, false},
		{"json but not an object", testKey, []byte(`[1,2]`), ErrMalformed, false},
		{"no payload", testKey, []byte(`{"version":1}`), ErrMalformed, false},
		{"payload not base64", testKey, []byte(`{"payload":"!!!"}`), ErrMalformed, false},
		{"wrong key", otherKey, sealed, ErrDecrypt, true},
		{"no key", nil, sealed, ErrKeyMissing, true},
		{"tampered", testKey, with("payload", base64.StdEncoding.EncodeToString([]byte("0123456789abcdefXYZ"))), ErrDecrypt, true},
		{"iv missing", testKey, with("iv", nil), ErrBadIV, false},
		{"iv 16 bytes", testKey, with("iv", base64.StdEncoding.EncodeToString(make([]byte, 16))), ErrBadIV, false},
		{"iv not base64", testKey, with("iv", "%%%"), ErrBadIV, false},
		{"unknown compression", testKey, with("compression", "zstd"), ErrUnknownCompression, false},
		{"unknown encryption", testKey, with("encryption", "rot13"), ErrUnknownEncryption, false},
		{"corrupt gzip", testKey, []byte(`{"payload":"` + base64.StdEncoding.EncodeToString([]byte("definitely not gzip")) + `","compression":"gzip"}`), ErrCorrupt, false},
		{"corrupt deflate", testKey, []byte(`{"payload":"/////w==","compression":"deflate"}`), ErrCorrupt, false},
		{"zlib written by another encoder", testKey, []byte(`{"payload":"eJzLSM3JyQcABiwCFQ==","compression":"zlib"}`), nil, false},
		{"gzip body cut short", testKey, func() []byte {
			var m map[string]any
			_ = json.Unmarshal(gzWire, &m)
			raw, _ := base64.StdEncoding.DecodeString(m["payload"].(string))
			m["payload"] = base64.StdEncoding.EncodeToString(raw[:len(raw)-6])
			b, _ := json.Marshal(m)
			return b
		}(), ErrCorrupt, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustDecoder(t, ModePacket, tt.key)
			_, err := d.Decode(tt.in)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if IsDecryptError(err) != tt.decrypt {
				t.Fatalf("IsDecryptError(%v) = %v", err, !tt.decrypt)
			}
		})
	}
}

func TestDecompressionIsBounded(t *testing.T) {
	e := mustEncoder(t, Options{Mode: ModePacket, Compression: CompressionDeflate})
	bomb, _ := e.Encode(nil, make([]byte, 1<<20)) // 1 MiB of zeros: ~1 KiB on the wire
	d, err := NewDecoder(ModePacket, nil, WithMaxDecodedSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decode(bomb); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	exact, _ := e.Encode(nil, make([]byte, 64<<10))
	if out, err := d.Decode(exact); err != nil || len(out) != 64<<10 {
		t.Fatalf("payload at the limit: %d bytes, %v", len(out), err)
	}
}

func TestEncoderIsSafeForConcurrentUse(t *testing.T) {
	e := mustEncoder(t, Options{Mode: ModePacket, Compression: CompressionGzip, Encryption: EncryptionAESGCM, Key: testKey})
	d := mustDecoder(t, ModePacket, testKey)
	done := make(chan error, 8)
	for g := range 8 {
		go func() {
			ev := bytes.Repeat([]byte{byte('a' + g)}, 300+g)
			for range 200 {
				w, err := e.Encode(nil, ev)
				if err == nil {
					var back []byte
					back, err = d.Decode(w)
					if err == nil && !bytes.Equal(back, ev) {
						err = errors.New("mismatch")
					}
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestEncodeIVsAreFresh encodes past several batches of IVs (they are
// drawn from crypto/rand ivBatch at a time) and checks that no IV repeats
// or is left zero: GCM must never reuse a nonce under one key.
func TestEncodeIVsAreFresh(t *testing.T) {
	e := mustEncoder(t, Options{Mode: ModePacket, Compression: CompressionGzip, Encryption: EncryptionAESGCM, Key: testKey})
	d := mustDecoder(t, ModePacket, testKey)
	seen := make(map[string]bool)
	zero := base64.StdEncoding.EncodeToString(make([]byte, ivSize))
	for i := range 3*ivBatch + 1 {
		wire, err := e.Encode(nil, []byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		if back, err := d.Decode(wire); err != nil || string(back) != "hello" {
			t.Fatalf("packet %d: decoded %q, %v", i, back, err)
		}
		var env struct{ IV string }
		if err := json.Unmarshal(wire, &env); err != nil {
			t.Fatal(err)
		}
		if env.IV == zero || seen[env.IV] {
			t.Fatalf("packet %d reuses IV %s (or it is zero)", i, env.IV)
		}
		seen[env.IV] = true
	}
}

// A decoder made WithEncryptionRequired refuses every unencrypted
// envelope (as a decrypt error: a configuration mismatch) and still
// opens encrypted ones; without the option both are taken.
func TestEncryptionRequired(t *testing.T) {
	required, err := NewDecoder(ModePacket, testKey, WithEncryptionRequired())
	if err != nil {
		t.Fatal(err)
	}
	lenient := mustDecoder(t, ModePacket, testKey)
	tests := []struct {
		name      string
		o         Options
		refusedBy bool // refused by the requiring decoder
	}{
		{"none", Options{Mode: ModePacket}, true},
		{"gzip, not encrypted", Options{Mode: ModePacket, Compression: CompressionGzip}, true},
		{"aes_gcm", Options{Mode: ModePacket, Encryption: EncryptionAESGCM, Key: testKey}, false},
		{"chacha20_poly1305", Options{Mode: ModePacket, Compression: CompressionZlib, Encryption: EncryptionChaCha20Poly1305, Key: testKey}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wire, err := mustEncoder(t, tt.o).Encode(nil, []byte("event"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := required.Decode(wire)
			if tt.refusedBy {
				if !errors.Is(err, ErrNotEncrypted) || !IsDecryptError(err) {
					t.Fatalf("requiring decoder: %q, %v; want ErrNotEncrypted, a decrypt error", got, err)
				}
			} else if err != nil || string(got) != "event" {
				t.Fatalf("requiring decoder: %q, %v; want the event", got, err)
			}
			if got, err := lenient.Decode(wire); err != nil || string(got) != "event" {
				t.Fatalf("lenient decoder: %q, %v; want the event", got, err)
			}
		})
	}
	raw, err := NewDecoder(ModeRaw, nil, WithEncryptionRequired())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := raw.Decode([]byte("plain")); err != nil || string(got) != "plain" {
		t.Fatalf("RAW with the option: %q, %v; want it verbatim", got, err)
	}
}
