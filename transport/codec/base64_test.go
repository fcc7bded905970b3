package codec

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// TestAppendBase64 compares appendBase64 with encoding/base64 for every
// length around its 6-byte steps and their 8-byte loads, after existing
// bytes in dst.
func TestAppendBase64(t *testing.T) {
	src := noise(600, 4)
	for n := 0; n <= len(src); n++ {
		got := appendBase64([]byte("pre"), src[:n])
		want := "pre" + base64.StdEncoding.EncodeToString(src[:n])
		if string(got) != want {
			t.Fatalf("%d bytes: got %s, want %s", n, got, want)
		}
	}
}

func FuzzAppendBase64(f *testing.F) {
	f.Add([]byte(""), []byte(""))
	f.Add([]byte("x"), []byte("hello, world"))
	f.Add([]byte(nil), bytes.Repeat([]byte{0xff, 0x00, 0xfb}, 40))
	f.Fuzz(func(t *testing.T, dst, src []byte) {
		got := appendBase64(bytes.Clone(dst), src)
		if !bytes.HasPrefix(got, dst) {
			t.Fatal("appendBase64 changed what dst held")
		}
		dec, err := base64.StdEncoding.DecodeString(string(got[len(dst):]))
		if err != nil || !bytes.Equal(dec, src) {
			t.Fatalf("encoding/base64 decodes %q to %x, %v; want %x", got[len(dst):], dec, err, src)
		}
	})
}
