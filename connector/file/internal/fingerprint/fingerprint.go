package fingerprint

import (
	"bytes"
	"errors"
	"hash/fnv"
	"io"
)

// Sum is the stored form of a fingerprint: the number of leading bytes it
// covers and their FNV-1a 64-bit hash.
type Sum struct {
	Len  int
	Hash uint64
}

// Print is an in-memory fingerprint: up to Max leading bytes of a file.
type Print struct {
	b   []byte
	max int
	sum Sum
}

// New returns an empty fingerprint that will grow up to max bytes.
func New(max int) *Print {
	p := &Print{max: max}
	p.sum = Of(nil)
	return p
}

// Of hashes b.
func Of(b []byte) Sum {
	h := fnv.New64a()
	_, _ = h.Write(b)
	return Sum{Len: len(b), Hash: h.Sum64()}
}

// Bytes returns the fingerprinted bytes; do not modify.
func (p *Print) Bytes() []byte { return p.b }

// Len is the number of bytes covered.
func (p *Print) Len() int { return len(p.b) }

// Full reports whether the fingerprint reached its maximum size.
func (p *Print) Full() bool { return len(p.b) >= p.max }

// Sum returns the stored form.
func (p *Print) Sum() Sum { return p.sum }

// Observe extends the fingerprint with data read at file offset off, when
// that data continues the covered prefix. It reports whether it grew.
func (p *Print) Observe(data []byte, off int64) bool {
	have := int64(len(p.b))
	if len(p.b) >= p.max || off > have || off+int64(len(data)) <= have {
		return false
	}
	data = data[have-off:]
	if room := p.max - len(p.b); len(data) > room {
		data = data[:room]
	}
	p.b = append(p.b, data...)
	p.sum = Of(p.b)
	return true
}

// Set replaces the fingerprint with cur (cut to the maximum).
func (p *Print) Set(cur []byte) {
	if len(cur) > p.max {
		cur = cur[:p.max]
	}
	p.b = append(p.b[:0], cur...)
	p.sum = Of(p.b)
}

// Matches reports whether cur, the current leading bytes of the file,
// still starts with the fingerprinted bytes.
func (p *Print) Matches(cur []byte) bool {
	return len(cur) >= len(p.b) && bytes.Equal(cur[:len(p.b)], p.b)
}

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
