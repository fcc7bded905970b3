package file

import (
	"strings"
	"testing"
	"time"
)

// TestFilesReportsOffsetAndLag: Files lists each tracked file with its
// identity, the delivered offset and what is left to read, refreshed at
// most once a second (the harness's clock).
func TestFilesReportsOffsetAndLag(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "one\ntwo\n")
	h.open()
	if got := h.in.Files(); len(got) != 1 || got[0].Offset != 0 || got[0].Lag != 8 {
		t.Fatalf("after open, before any poll: %+v, want a.log with 8 bytes to read", got)
	}
	h.clock = h.clock.Add(2 * time.Second)
	h.pollAll()
	files := h.in.Files()
	if len(files) != 1 {
		t.Fatalf("files %+v, want a.log", files)
	}
	f := files[0]
	if f.Path != h.path("a.log") || f.Offset != 8 || f.Size != 8 || f.Lag != 0 || !strings.Contains(f.Identity, ":") {
		t.Fatalf("after reading everything: %+v", f)
	}

	// Written and scanned, but not read yet: lag is the unread bytes.
	h.write("a.log", "three\n")
	h.in.mg.rescan = true
	h.clock = h.clock.Add(2 * time.Second)
	if err := h.in.set.scan(t.Context(), h.clock); err != nil {
		t.Fatal(err)
	}
	h.in.publish()
	if f := h.in.Files()[0]; f.Offset != 8 || f.Size != 14 || f.Lag != 6 {
		t.Fatalf("after a scan that saw 6 new bytes: %+v", f)
	}
	h.pollAll()
	h.clock = h.clock.Add(2 * time.Second)
	h.pollAll()
	if f := h.in.Files()[0]; f.Offset != 14 || f.Lag != 0 {
		t.Fatalf("after reading them: %+v", f)
	}
}
