package wal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunChild: the check runs in a child process of the running binary
// (here the test binary, whose init enters checkChild), and every way the
// child can end is told apart: a verdict, a child that cannot start, one
// that does not finish in time.
func TestRunChild(t *testing.T) {
	path := buildFixture(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sound := checkRequest{Path: path, LockTimeout: time.Second, Rows: true}
	for _, tc := range []struct {
		name    string
		exe     string
		req     checkRequest
		timeout time.Duration
		wantErr string // "" for a verdict
	}{
		{name: "sound file", exe: exe, req: sound, timeout: time.Minute},
		{name: "missing file", exe: exe, req: checkRequest{Path: filepath.Join(t.TempDir(), "none.db")}, timeout: time.Minute},
		{name: "no executable", exe: filepath.Join(t.TempDir(), "none"), req: sound, timeout: time.Minute, wantErr: "damage check:"},
		{name: "timeout", exe: exe, req: sound, timeout: time.Nanosecond, wantErr: "did not finish within 1ns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := runChild(tc.exe, os.Environ(), tc.req, tc.timeout)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("verdict %+v, error %v, want an error with %q", v, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Damage) > 0 || v.Locked {
				t.Fatalf("verdict %+v on a file that is not damaged", v)
			}
			if tc.name == "missing file" && v.OpenError == "" {
				t.Fatal("no open error for a missing file")
			}
		})
	}
}

// TestPrecheckLocked: a read-write open of a file another opener holds
// reports ErrLocked, found by the child, not a damaged file.
func TestPrecheckLocked(t *testing.T) {
	path := buildFixture(t)
	openAt(t, path, newClock(t0))
	_, err := Open(Options{Path: path, LockTimeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
}

func TestCrashLine(t *testing.T) {
	for in, want := range map[string]string{
		"panic: runtime error: index out of range\n\ngoroutine 1 [running]:\nmain.main()\n":                                                    "runtime error: index out of range",
		"unexpected fault address 0x7f\nfatal error: fault\n[signal SIGBUS: bus error code=0x2 addr=0x7f pc=0x61]\n\ngoroutine 6 [running]:\n": "unexpected fault address 0x7f; fatal error: fault; [signal SIGBUS: bus error code=0x2 addr=0x7f pc=0x61]",
		"\nkilled\n": "killed",
		"==================\nWARNING: DATA RACE\nRead at 0x00c0 by goroutine 9:\n  bbolt.(*Tx).page()\n==================\n" +
			"unexpected fault address 0x0\nfatal error: fault\n\ngoroutine 9 [running]:\n": "unexpected fault address 0x0; fatal error: fault",
		"": "no output",
	} {
		if got := crashLine(in); got != want {
			t.Errorf("crashLine(%q) = %q, want %q", in, got, want)
		}
	}
	if got := crashLine(strings.Repeat("x", 2*maxCrashLine)); len(got) > maxCrashLine+3 {
		t.Errorf("crashLine kept %d bytes", len(got))
	}
}

// TestPrecheckSurvivesBboltCrash: on a branch page pointing far outside
// the file, bbolt's check crashes the process it runs in (an index out of
// range in a goroutine of its own, which no recover reaches), or, when the
// walk meets the page on the goroutine that recovers, reports the panic as
// a problem. Which one depends on scheduling; either way the open outlives
// it and refuses the file with bbolt's reason.
func TestPrecheckSurvivesBboltCrash(t *testing.T) {
	var d damage
	for _, c := range damages {
		if c.name == "branch page element damaged" {
			d = c
		}
	}
	path := buildFixture(t)
	d.apply(t, path)
	_, err := Open(Options{Path: path})
	crashed := err != nil && strings.Contains(err.Error(), "bbolt crashed reading the file (")
	recovered := err != nil && strings.Contains(err.Error(), "first: bbolt: runtime error:")
	if !errors.Is(err, ErrDamaged) || !crashed && !recovered {
		t.Fatalf("open: %v, want ErrDamaged from a crashed check", err)
	}
	if strings.Contains(err.Error(), "panic") || strings.Contains(err.Error(), "goroutine ") {
		t.Fatalf("the error reads like the agent's own crash: %v", err)
	}
}
