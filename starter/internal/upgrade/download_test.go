package upgrade

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// server serves content with Range support; cut > 0 aborts the next
// response after so many bytes.
type fileServer struct {
	mu      sync.Mutex
	content []byte
	cut     int
	ranges  []string
	noRange bool
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	cut := s.cut
	s.cut = 0
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	s.mu.Unlock()
	if s.noRange {
		r.Header.Del("Range")
	}
	if cut > 0 {
		w.Header().Set("Content-Length", "999999")
		_, _ = w.Write(s.content[:cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(s.content))
}

func TestDownload(t *testing.T) {
	content := bytes.Repeat([]byte("edge-agent "), 20000)
	sum := sha256.Sum256(content)
	for _, tc := range []struct {
		name       string
		cut        int
		noRange    bool
		max        int64
		want       []byte
		wantErr    error
		wantRanges []string
		prefill    []byte
	}{
		{name: "whole", want: sum[:], wantRanges: []string{""}},
		{name: "cut, then resumed", cut: 5000, want: sum[:], wantRanges: []string{"", "bytes=5000-"}},
		{name: "a partial file from before a restart", prefill: content[:7000], want: sum[:], wantRanges: []string{"bytes=7000-"}},
		{name: "server ignores Range", prefill: content[:7000], noRange: true, want: sum[:], wantRanges: []string{"bytes=7000-"}},
		{name: "too large", max: 1000, want: sum[:], wantErr: ErrTooLarge},
		{name: "wrong hash", want: make([]byte, 32), wantErr: ErrHash},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &fileServer{content: content, cut: tc.cut, noRange: tc.noRange}
			srv := httptest.NewServer(fs)
			defer srv.Close()
			part := filepath.Join(t.TempDir(), "d", "x.part")
			if tc.prefill != nil {
				if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(part, tc.prefill, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			limit := tc.max
			if limit == 0 {
				limit = 1 << 30
			}
			var err error
			for range 3 {
				if err = download(context.Background(), srv.Client(), srv.URL, nil, part, limit, tc.want, nil); err == nil || tc.wantErr != nil {
					break
				}
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(part)
			if !bytes.Equal(got, content) {
				t.Errorf("downloaded %d bytes, want %d", len(got), len(content))
			}
			if len(fs.ranges) != len(tc.wantRanges) {
				t.Fatalf("requests %q, want %q", fs.ranges, tc.wantRanges)
			}
			for i := range fs.ranges {
				if fs.ranges[i] != tc.wantRanges[i] {
					t.Errorf("requests %q, want %q", fs.ranges, tc.wantRanges)
				}
			}
		})
	}
}

func FuzzContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-9/10", "bytes 5-/", "bytes */10", "", "bytes 1-2/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start, size, ok := contentRange(s)
		if ok && (start < 0 || size < 0 || start > size) {
			t.Fatalf("%q parsed as start %d of %d", s, start, size)
		}
	})
}
