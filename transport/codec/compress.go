package codec

import (
	"bytes"
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
	out  appendWriter
	gz   *gzip.Writer
	zl   *zlib.Writer
	fl   *flate.Writer
	seal []byte
	iv   [ivSize]byte
}

// level matches the Java agent's Deflater.DEFAULT_COMPRESSION. Faster
// levels measured no better on small events, whose cost is the per-stream
// Huffman set-up rather than matching.
const level = flate.DefaultCompression

// compress returns raw compressed with c; the result is valid until the
// next call on the same compressor.
func (s *compressor) compress(c Compression, raw []byte) ([]byte, error) {
	s.out.b = s.out.b[:0]
	var w io.WriteCloser
	switch c {
	case CompressionGzip:
		if s.gz == nil {
			s.gz, _ = gzip.NewWriterLevel(&s.out, level)
		} else {
			s.gz.Reset(&s.out)
		}
		w = s.gz
	case CompressionZlib:
		if s.zl == nil {
			s.zl, _ = zlib.NewWriterLevel(&s.out, level)
		} else {
			s.zl.Reset(&s.out)
		}
		w = s.zl
	case CompressionDeflate:
		if s.fl == nil {
			s.fl, _ = flate.NewWriter(&s.out, level)
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
