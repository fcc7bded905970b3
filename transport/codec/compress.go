package codec

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
)

// appendWriter is an io.Writer appending to a reusable slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// compressor holds one reusable writer per format; building a deflate
// writer allocates hundreds of KiB, so they live in the Encoder's pool.
type compressor struct {
	out appendWriter
	gz  *gzip.Writer
	zl  *zlib.Writer
	fl  *flate.Writer
	// fixed serves level 1 for events up to fixedMaxInput.
	fixed *fixedDeflater
	seal  []byte
	iv    [ivSize]byte
	// ivs holds random bytes for the next IVs, the last ivLeft of them
	// not yet used: one crypto/rand read per ivBatch packets instead of
	// one per packet, which cost as much as a tenth of encoding a small
	// event. Every IV is still drawn from crypto/rand and used once.
	ivs    [ivBatch * ivSize]byte
	ivLeft int
}

// ivBatch is how many IVs one crypto/rand read fills.
const ivBatch = 32

// nextIV sets s.iv to fresh random bytes, refilling s.ivs when they are
// used up.
func (s *compressor) nextIV() error {
	if s.ivLeft == 0 {
		if _, err := rand.Read(s.ivs[:]); err != nil {
			return err
		}
		s.ivLeft = ivBatch
	}
	next := s.ivs[len(s.ivs)-s.ivLeft*ivSize:][:ivSize]
	copy(s.iv[:], next)
	clear(next) // a used IV does not stay behind to be handed out again
	s.ivLeft--
	return nil
}

// compress returns raw compressed with c at level (valid for c, checked
// by Options.Validate); the result is valid until the next call on the
// same compressor. A compressor serves one Encoder, so one level.
func (s *compressor) compress(c Compression, level int, raw []byte) ([]byte, error) {
	s.out.b = s.out.b[:0]
	if level == 1 && len(raw) <= fixedMaxInput && c != CompressionNone {
		if s.fixed == nil {
			s.fixed = new(fixedDeflater)
		}
		s.out.b = s.fixed.appendFixed(c, s.out.b, raw)
		return s.out.b, nil
	}
	var w io.WriteCloser
	switch c {
	case CompressionGzip:
		if s.gz == nil {
			var err error
			if s.gz, err = gzip.NewWriterLevel(&s.out, level); err != nil {
				return nil, fmt.Errorf("compress %s: %w", c, err)
			}
		} else {
			s.gz.Reset(&s.out)
		}
		w = s.gz
	case CompressionZlib:
		if s.zl == nil {
			var err error
			if s.zl, err = zlib.NewWriterLevel(&s.out, level); err != nil {
				return nil, fmt.Errorf("compress %s: %w", c, err)
			}
		} else {
			s.zl.Reset(&s.out)
		}
		w = s.zl
	case CompressionDeflate:
		if s.fl == nil {
			var err error
			if s.fl, err = flate.NewWriter(&s.out, level); err != nil {
				return nil, fmt.Errorf("compress %s: %w", c, err)
			}
		} else {
			s.fl.Reset(&s.out)
		}
		w = s.fl
	default:
		return nil, fmt.Errorf("%w %d", ErrUnknownCompression, int(c))
	}
	if _, err := w.Write(raw); err != nil {
		return nil, fmt.Errorf("compress %s: %w", c, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("compress %s: %w", c, err)
	}
	return s.out.b, nil
}

// decompressor holds reusable readers, one per format.
type decompressor struct {
	src bytes.Reader
	gz  *gzip.Reader
	zl  io.ReadCloser
	fl  io.ReadCloser
	out bytes.Buffer
}

// decompress inflates body, refusing to produce more than limit bytes.
// The result is a fresh slice owned by the caller.
func (d *decompressor) decompress(c Compression, body []byte, limit int) ([]byte, error) {
	d.src.Reset(body)
	var r io.Reader
	var err error
	switch c {
	case CompressionGzip:
		if d.gz == nil {
			d.gz, err = gzip.NewReader(&d.src)
		} else {
			err = d.gz.Reset(&d.src)
		}
		r = d.gz
	case CompressionZlib:
		if d.zl == nil {
			d.zl, err = zlib.NewReader(&d.src)
		} else {
			err = d.zl.(zlib.Resetter).Reset(&d.src, nil)
		}
		r = d.zl
	case CompressionDeflate:
		if d.fl == nil {
			d.fl = flate.NewReader(&d.src)
		} else {
			err = d.fl.(flate.Resetter).Reset(&d.src, nil)
		}
		r = d.fl
	default:
		return nil, fmt.Errorf("%w %d", ErrUnknownCompression, int(c))
	}
	if err != nil {
		// A failed header read leaves a nil or half-reset reader: drop it.
		d.gz, d.zl = nil, nil
		return nil, fmt.Errorf("%w: %s header: %v", ErrCorrupt, c, err)
	}
	d.out.Reset()
	n, err := d.out.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
	}
	if n > int64(limit) {
		return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit)
	}
	return bytes.Clone(d.out.Bytes()), nil
}
