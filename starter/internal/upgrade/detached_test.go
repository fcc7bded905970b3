package upgrade

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
)

// A detached signature round-trips, verifies against its key and file,
// and is refused for another file or another key.
func TestDetached(t *testing.T) {
	pub, priv, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := GenerateKey(nil)
	sum := sha256.Sum256([]byte("artifact"))
	d, err := ParseDetached(SignDetached(priv, "0.2.0", sum[:], false).Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyDetached(pub, d, sum[:]); err != nil {
		t.Fatalf("as signed: %v", err)
	}
	changed := sha256.Sum256([]byte("artifacT"))
	if err := VerifyDetached(pub, d, changed[:]); !errors.Is(err, ErrFileChanged) {
		t.Errorf("another file: %v, want ErrFileChanged", err)
	}
	if err := VerifyDetached(other, d, sum[:]); !errors.Is(err, ErrWrongKey) {
		t.Errorf("another key: %v, want ErrWrongKey", err)
	}
}

func TestParseDetachedRefuses(t *testing.T) {
	good := "version: 0.2.0\nsha256: " + strings.Repeat("ab", 32) + "\nsignature: " + strings.Repeat("A", 86) + "==\n"
	if _, err := ParseDetached([]byte(good)); err != nil {
		t.Fatalf("good: %v", err)
	}
	for name, in := range map[string]string{
		"empty":           "",
		"no colon":        "version 0.2.0\n",
		"missing line":    "version: 0.2.0\nsha256: " + strings.Repeat("ab", 32) + "\n",
		"repeated key":    good + "version: 0.2.0\n",
		"unknown key":     good + "key: x\n",
		"upper hex":       strings.Replace(good, strings.Repeat("ab", 32), strings.Repeat("AB", 32), 1),
		"short sha":       strings.Replace(good, strings.Repeat("ab", 32), "abab", 1),
		"short signature": strings.Replace(good, strings.Repeat("A", 86)+"==", "AAAA", 1),
		"bad version":     strings.Replace(good, "0.2.0", "../x", 1),
		"too large":       good + strings.Repeat("x", MaxDetachedSize),
	} {
		if _, err := ParseDetached([]byte(in)); !errors.Is(err, ErrDetachedFormat) {
			t.Errorf("%s: %v, want ErrDetachedFormat", name, err)
		}
	}
}

// Whatever it is given, ParseDetached either refuses it or returns what
// Marshal writes back byte for byte (up to a CRLF or a missing newline).
func FuzzParseDetached(f *testing.F) {
	_, priv, _ := GenerateKey(nil)
	sum := sha256.Sum256(nil)
	f.Add(SignDetached(priv, "1.4.0", sum[:], false).Marshal())
	f.Add([]byte("version: 1\nsha256: x\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := ParseDetached(in)
		if err != nil {
			if bytes.Contains([]byte(err.Error()), in) && len(in) > 16 {
				t.Fatalf("error quotes the input: %v", err)
			}
			return
		}
		again, err := ParseDetached(d.Marshal())
		if err != nil {
			t.Fatalf("Marshal of a parsed signature does not parse: %v", err)
		}
		if !bytes.Equal(again.Marshal(), d.Marshal()) {
			t.Fatalf("round trip changed it")
		}
	})
}
