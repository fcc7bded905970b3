package file

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/input"
)

func TestClampOpenFiles(t *testing.T) {
	for _, c := range []struct {
		want    int
		limit   uint64
		got     int
		lowered bool
	}{
		{1024, 0, 1024, false},                // unknown or unlimited
		{1024, 1_048_576, 1024, false},        // plenty
		{1024, 1024 + fdReserve, 1024, false}, // exactly enough
		{1024, 1024, 1024 - fdReserve, true},  // ulimit -n 1024
		{5000, 1024, 1024 - fdReserve, true},
		{1024, fdReserve, 1, true}, // absurdly low: still one file at a time
		{1024, 10, 1, true},
	} {
		got, lowered := clampOpenFiles(c.want, c.limit)
		if got != c.got || lowered != c.lowered {
			t.Errorf("clampOpenFiles(%d, %d) = %d, %v; want %d, %v", c.want, c.limit, got, lowered, c.got, c.lowered)
		}
	}
}

// Finding: max-open-files at its default under `ulimit -n 1024` ran the
// process out of descriptors (EMFILE) for listings, the WAL and sockets.
// New must keep it below this process's real limit, and say so.
func TestNewClampsMaxOpenFilesToLimit(t *testing.T) {
	limit := openFilesLimit()
	if limit == 0 {
		t.Skip("no open-files limit on this system")
	}
	var logs bytes.Buffer
	cfg := NewDefaultConfig()
	cfg.Paths = []string{t.TempDir()}
	cfg.MaxOpenFiles = int(limit) + 100
	in, err := New(cfg, input.Settings{ID: "x", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	must(t, err)
	if got := in.cfg.MaxOpenFiles; uint64(got)+fdReserve > limit && got != 1 {
		t.Fatalf("max-open-files %d with an open-files limit of %d", got, limit)
	}
	if !strings.Contains(logs.String(), "max-open-files lowered") || !strings.Contains(logs.String(), "configured="+strconv.Itoa(cfg.MaxOpenFiles)) {
		t.Fatalf("clamp not logged:\n%s", logs.String())
	}
}
