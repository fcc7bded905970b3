package exitcode_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport"
)

func TestFor(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, exitcode.OK},
		{errors.New("boom"), exitcode.Failure},
		{fmt.Errorf("load: %w", config.ErrInvalid), exitcode.Config},
		{fmt.Errorf("stop: %w", transport.ErrAuthFailed), exitcode.AuthFailed},
		{transport.ErrDecryptFailed, exitcode.DecryptFailed},
		{wal.ErrLocked, exitcode.InUse},
		{fmt.Errorf("open WAL: %w", wal.ErrDamaged), exitcode.Damaged},
		{fmt.Errorf("open WAL: %w", wal.ErrKey), exitcode.Config},
		{transport.ErrUnavailable, exitcode.Failure},
	} {
		if got := exitcode.For(tc.err); got != tc.want {
			t.Errorf("For(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// A Go panic exits 2: no code of ours may share it, or a crash would pass
// for a decision of the agent's, and the unit would not restart it.
func TestNoCodeCollidesWithAPanic(t *testing.T) {
	const goPanic = 2
	all := []int{exitcode.OK, exitcode.Failure, exitcode.NotRunning, exitcode.AuthFailed,
		exitcode.DecryptFailed, exitcode.InUse, exitcode.Usage, exitcode.Damaged, exitcode.Config}
	if slices.Contains(all, goPanic) {
		t.Fatalf("an exit code equals the Go runtime's panic code %d: %v", goPanic, all)
	}
	seen := map[int]bool{}
	for _, c := range all {
		if seen[c] {
			t.Fatalf("exit code %d defined twice", c)
		}
		seen[c] = true
	}
	if slices.Contains(exitcode.NoRestart, exitcode.Failure) || slices.Contains(exitcode.NoRestart, goPanic) {
		t.Fatalf("NoRestart %v would keep a crash down", exitcode.NoRestart)
	}
}

// The systemd unit shipped in the release must hold back exactly the codes
// that NoRestart names: a code added here and not there would be retried
// forever, and a stale one there would keep a crash down.
func TestSystemdUnitFollowsNoRestart(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join("..", "..", "..", "dist", "packaging", "edge-agent.service"))
	if err != nil {
		t.Fatalf("read the unit: %v", err)
	}
	var got []int
	found := false
	for line := range strings.Lines(string(unit)) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "RestartPreventExitStatus=")
		if !ok {
			continue
		}
		found = true
		for f := range strings.FieldsSeq(v) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("RestartPreventExitStatus holds %q, not a number", f)
			}
			got = append(got, n)
		}
	}
	if !found {
		t.Fatal("the unit has no RestartPreventExitStatus line")
	}
	want := slices.Clone(exitcode.NoRestart)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("unit RestartPreventExitStatus = %v, exitcode.NoRestart = %v", got, want)
	}
}
