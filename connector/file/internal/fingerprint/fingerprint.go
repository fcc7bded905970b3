package fingerprint

import (
	"errors"
	"io"
)

// Sum is the stored form of a fingerprint: the number of leading bytes it
// covers and their FNV-1a 64-bit hash.
type Sum struct {
	Len  int
	Hash uint64
}

// FNV-1a 64 parameters (as hash/fnv), inlined so a sum can be extended
// with more bytes without keeping the bytes it covers.
const (
	offset64 = 14695981039346656037
	prime64  = 1099511628211
)

func extend(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= prime64
	}
	return h
}

// Print is an in-memory fingerprint of up to max leading bytes of a file.
// It keeps only their Sum, not the bytes: an agent may track hundreds of
// thousands of files, and a kilobyte each would dominate its memory. A
// prefix is matched by hashing the file's current first bytes, so two
// different prefixes are told apart unless their 64-bit hashes collide.
type Print struct {
	max int
	sum Sum
}

// New returns an empty fingerprint that will grow up to max bytes.
func New(max int) Print {
	return Print{max: max, sum: Of(nil)}
}

// Of hashes b.
func Of(b []byte) Sum {
	return Sum{Len: len(b), Hash: extend(offset64, b)}
}

// Len is the number of bytes covered.
func (p *Print) Len() int { return p.sum.Len }

// Full reports whether the fingerprint reached its maximum size.
func (p *Print) Full() bool { return p.sum.Len >= p.max }

// Sum returns the stored form.
func (p *Print) Sum() Sum { return p.sum }

// Observe extends the fingerprint with data read at file offset off, when
// that data continues the covered prefix. It reports whether it grew.
func (p *Print) Observe(data []byte, off int64) bool {
	have := int64(p.sum.Len)
	if p.sum.Len >= p.max || off > have || off+int64(len(data)) <= have {
		return false
	}
	data = data[have-off:]
	if room := p.max - p.sum.Len; len(data) > room {
		data = data[:room]
	}
	p.sum = Sum{Len: p.sum.Len + len(data), Hash: extend(p.sum.Hash, data)}
	return true
}

// Set replaces the fingerprint with cur (cut to the maximum).
func (p *Print) Set(cur []byte) {
	if len(cur) > p.max {
		cur = cur[:p.max]
	}
	p.sum = Of(cur)
}

// Matches reports whether cur, the current leading bytes of the file,
// still starts with the fingerprinted bytes.
func (p *Print) Matches(cur []byte) bool { return MatchesSum(cur, p.sum) }

// MatchesSum reports whether cur starts with the bytes summed in s.
func MatchesSum(cur []byte, s Sum) bool {
	return len(cur) >= s.Len && Of(cur[:s.Len]) == s
}

// Read reads up to max leading bytes of r into buf (grown as needed); a
// file shorter than max yields its whole content.
func Read(r io.ReaderAt, max int, buf []byte) ([]byte, error) {
	if cap(buf) < max {
		buf = make([]byte, max)
	}
	buf = buf[:max]
	n, err := r.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// Prefixes returns the Sum of each prefix of b whose length is in lens
// (ascending, each at most len(b)), in one pass over b: a new file is
// matched against fingerprints of several lengths at once.
func Prefixes(b []byte, lens []int) []Sum {
	out := make([]Sum, 0, len(lens))
	h, at := uint64(offset64), 0
	for _, n := range lens {
		h = extend(h, b[at:n])
		at = n
		out = append(out, Sum{Len: n, Hash: h})
	}
	return out
}
