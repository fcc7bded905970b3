package file

import (
	"maps"
	"testing"
)

// FuzzDecodeState: a saved position, whatever its bytes, decodes or is
// refused with an error, never a panic; what the input writes (with and
// without a prior) decodes back to the same identity, offsets and prior.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(`{"v":1,"path":"/a.log","dev":1,"ino":2,"fp_len":4,"fp":"abc","offset":10,"line":1,"size":12}`))
	f.Add([]byte(`{"v":1,"dev":1,"ino":2,"fp_len":4,"fp":"abc","prev":{"fp_len":3,"fp":"ff","offset":5,"line":1},"offset":0,"line":0}`))
	f.Add([]byte(`{"v":1,"prev":{"fp_len":0,"fp":"zz"}}`))
	f.Add([]byte(`{"v":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeState("k", b)
		if err != nil {
			return
		}
		if s.prior != nil && (s.prior.Sum.Len <= 0 || s.prior.Offset < 0) {
			t.Fatalf("accepted a malformed prev: %+v", s.prior)
		}
		// Write it back the way the input does and read it again.
		out := appendStateHead(nil, s.id(), []byte(`"p"`), s.sum, s.prior)
		out = appendStateTail(out, s.Offset, s.Line, s.Size)
		r, err := decodeState("k", out)
		if err != nil {
			t.Fatalf("own state %s: %v", out, err)
		}
		if r.id() != s.id() || r.sum != s.sum || r.Offset != s.Offset || r.Line != s.Line || r.Size != s.Size {
			t.Fatalf("round trip %+v → %s → %+v", s, out, r)
		}
		if (r.prior == nil) != (s.prior == nil) || (r.prior != nil && *r.prior != *s.prior) {
			t.Fatalf("prior %+v came back as %+v", s.prior, r.prior)
		}
	})
}

// FuzzDecodePatterns: the patterns record decodes or is refused, and what
// the input records reads back as the same set.
func FuzzDecodePatterns(f *testing.F) {
	f.Add([]byte(`{"v":1,"patterns":["/var/log/*.log","/a/**"]}`))
	f.Add([]byte(`{"v":1,"patterns":null}`))
	f.Add([]byte(`{"v":3,"patterns":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := decodePatterns(b)
		if err != nil {
			return
		}
		again, err := decodePatterns(encodePatterns(slicesOf(set)))
		if err != nil || !maps.Equal(set, again) {
			t.Fatalf("%v → %v (%v)", set, again, err)
		}
	})
}

func slicesOf(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	return out
}
