package upgrade

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrTooLarge is wrapped when a package exceeds max-size-mb.
var ErrTooLarge = errors.New("package larger than management.opamp.packages.max-size-mb")

// ErrHash is wrapped when the downloaded file's SHA-256 is not the
// offer's content hash.
var ErrHash = errors.New("package content hash mismatch")

// download fetches url into part, resuming from what part already holds
// with a Range request (a server that ignores it sends the whole file,
// which then replaces part). It returns once part holds the whole file
// and its SHA-256 is want; a file with another hash is deleted.
func download(ctx context.Context, hc *http.Client, url string, header http.Header, part string, maxSize int64, want []byte, progress func(done, total int64)) error {
	if err := os.MkdirAll(filepath.Dir(part), 0o750); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if have > maxSize {
		have = 0
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	defer resp.Body.Close()
	total := int64(-1)
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, size, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			return fmt.Errorf("download %s: Content-Range %q does not resume at byte %d", url, resp.Header.Get("Content-Range"), have)
		}
		total = size
	case http.StatusRequestedRangeNotSatisfiable:
		// part holds the whole file already (or more): check it below,
		// and start over if it is wrong.
		total = have
	case http.StatusOK:
		have = 0
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("download: %w", err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("download: %w", err)
		}
		total = resp.ContentLength
	default:
		return fmt.Errorf("download %s: HTTP %s", url, resp.Status)
	}
	if total > maxSize {
		return fmt.Errorf("%w: %d bytes offered, limit %d", ErrTooLarge, total, maxSize)
	}
	if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		w := &progressWriter{w: f, done: have, total: total, progress: progress}
		n, err := io.Copy(w, io.LimitReader(resp.Body, maxSize-have+1))
		if have+n > maxSize {
			_ = f.Truncate(0)
			return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, maxSize)
		}
		if err != nil {
			// What arrived stays in part: the next attempt resumes there.
			return fmt.Errorf("download %s: cut at byte %d: %w", url, have+n, err)
		}
		if total >= 0 && have+n < total {
			return fmt.Errorf("download %s: cut at byte %d of %d", url, have+n, total)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if got := h.Sum(nil); string(got) != string(want) {
		f.Close()
		_ = os.Remove(part)
		return fmt.Errorf("%w: the file from %s has SHA-256 %x, the offer says %x", ErrHash, url, got, want)
	}
	return nil
}

// contentRange parses "bytes START-END/SIZE".
func contentRange(v string) (start, size int64, ok bool) {
	v, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, total, found := strings.Cut(v, "/")
	if !found {
		return 0, 0, false
	}
	from, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(from, 10, 64)
	size, err2 := strconv.ParseInt(total, 10, 64)
	if err1 != nil || err2 != nil || start < 0 || size < 0 || start > size {
		return 0, 0, false
	}
	return start, size, true
}

type progressWriter struct {
	w           io.Writer
	done, total int64
	progress    func(done, total int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.progress != nil {
		p.progress(p.done, p.total)
	}
	return n, err
}
