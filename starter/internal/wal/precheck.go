package wal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The damage check. bbolt trusts its file: on a damaged one it panics,
// faults on its mapping or loops, some of it where no recover reaches. So
// the file is opened and checked by bbolt in a child process first (the
// running binary again, entered through checkEnv in this package's init,
// so every binary that links the WAL has the entry point), and whatever
// ends that child is a verdict, never the end of the agent.

// checkEnv carries the checkRequest to the child; it is set only there.
const checkEnv = "EDGE_AGENT_WAL_CHECK"

func init() {
	if req, ok := os.LookupEnv(checkEnv); ok {
		os.Exit(checkChild(req, os.Stdout))
	}
}

type checkRequest struct {
	Path        string        `json:"path"`
	LockTimeout time.Duration `json:"lock_timeout"`
	// Rows adds the WAL's own checks to bbolt's (coverageDamage).
	Rows bool `json:"rows"`
}

// checkVerdict is what the child writes on its stdout.
type checkVerdict struct {
	Damage []string `json:"damage,omitempty"` // empty: sound
	More   int      `json:"more,omitempty"`   // findings beyond checkMaxDamage
	Locked bool     `json:"locked,omitempty"` // another process has the file
	// OpenError: bbolt did not open the file (not a bbolt file, a damaged
	// header); the caller's own open says why.
	OpenError string `json:"open_error,omitempty"`
}

// checkLauncher, when set, is a program that starts the child with the
// child's path as its argument. Empty in every shipped build; only a
// build with -tags emulated sets it (precheck_emulated.go).
var checkLauncher string

// checkMaxDamage bounds the findings a verdict carries.
const checkMaxDamage = 20

// checkChild runs the check of the JSON checkRequest req and writes the
// verdict to out; it returns the process's exit code.
func checkChild(req string, out io.Writer) int {
	var r checkRequest
	if err := json.Unmarshal([]byte(req), &r); err != nil {
		fmt.Fprintf(os.Stderr, "wal check: bad request %q: %v\n", req, err)
		return 2
	}
	if err := json.NewEncoder(out).Encode(checkFile(r)); err != nil {
		fmt.Fprintf(os.Stderr, "wal check: %v\n", err)
		return 2
	}
	return 0
}

// checkFile opens r.Path read-only with bbolt and runs Tx.Check (which,
// with the WAL's NoFreelistSync, also runs the free-page scan of a
// read-write open), then with r.Rows the WAL's own checks.
func checkFile(r checkRequest) (v checkVerdict) {
	db, err := bolt.Open(r.Path, 0o600, &bolt.Options{ReadOnly: true, Timeout: r.LockTimeout,
		NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return checkVerdict{Locked: true}
	case err != nil:
		return checkVerdict{OpenError: err.Error()}
	}
	// Not closed: on damage bbolt's free-page scan can leave a goroutine
	// reading the mapping, and the process exits once the verdict is out.
	if f, err := os.Open(r.Path); err == nil {
		// The check reads a page of every block. With the file dropped
		// from the page cache and random access advised, that is about
		// all it maps: the kernel's fault-around maps the cached
		// neighbours of each page a fault reads, and read-around reads
		// them in.
		if st, err := f.Stat(); err == nil && dropCache(f) == nil {
			_ = adviseRandom(db, st.Size())
		}
		_ = f.Close()
	}
	add := func(what string) {
		if len(v.Damage) < checkMaxDamage {
			v.Damage = append(v.Damage, what)
		} else {
			v.More++
		}
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			add(fmt.Sprintf("bbolt: %v", p))
		}
	}()
	_ = db.View(func(btx *bolt.Tx) error {
		for err := range btx.Check() {
			add(checkError(err))
		}
		if len(v.Damage) == 0 && r.Rows {
			for _, d := range coverageDamage(btx) {
				add(d.String())
			}
		}
		return nil
	})
	return v
}

// runCheck runs the check of req in a child process, waiting at most
// timeout. A child that ends without a verdict (bbolt crashed it) is a
// verdict of damage with what it printed.
func (w *WAL) runCheck(req checkRequest, timeout time.Duration) (checkVerdict, error) {
	exe, err := os.Executable()
	if err != nil {
		return checkVerdict{}, fmt.Errorf("damage check: %w", err)
	}
	return runChild(exe, os.Environ(), req, timeout)
}

// runChild runs exe as the checking child of req with env.
func runChild(exe string, env []string, req checkRequest, timeout time.Duration) (checkVerdict, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return checkVerdict{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	if checkLauncher != "" {
		// The emulator would run a missing exe to a failed exit, read
		// below as a crash: a missing exe is an error, as without it.
		if _, err := os.Stat(exe); err != nil {
			return checkVerdict{}, fmt.Errorf("damage check: %w", err)
		}
		cmd = exec.CommandContext(ctx, checkLauncher, exe)
	}
	// A race-detector build sleeps a second at exit unless told not to.
	gorace := "atexit_sleep_ms=0"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			gorace = v + " " + gorace
		}
	}
	cmd.Env = append(env, checkEnv+"="+string(b), "GORACE="+gorace)
	stdout := &capped{max: 1 << 20}
	stderr := &capped{max: 16 << 10} // the crash reason comes first
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		return checkVerdict{}, fmt.Errorf("the damage check did not finish within %s: %w", timeout, ctx.Err())
	}
	var v checkVerdict
	var exit *exec.ExitError
	switch {
	case json.Unmarshal(stdout.buf.Bytes(), &v) == nil:
		// Written once the check was done, whatever ended the child
		// after it (a race-detector build exits 66 for a race it saw in
		// bbolt's handling of the damage).
		return v, nil
	case err != nil && !errors.As(err, &exit):
		return checkVerdict{}, fmt.Errorf("damage check: %w", err)
	}
	return checkVerdict{Damage: []string{"bbolt crashed reading the file (" + crashLine(stderr.String()) + ")"}}, nil
}

// checkError is the finding of an error of Tx.Check; bbolt reports a
// panic it recovered as "panic: <reason>", which is said as damage here.
func checkError(err error) string {
	return "bbolt: " + strings.TrimPrefix(err.Error(), "panic: ")
}

// crashLine is what a Go process that crashed said about why: the lines
// before its goroutine dump, joined, without "panic: " (the caller's
// process did not panic) and without the race detector's reports (a
// race-detector build reports the races of bbolt's damage handling), at
// most maxCrashLine bytes.
func crashLine(stderr string) string {
	var parts []string
	inRace := false
	for line := range strings.Lines(stderr) {
		line = strings.TrimSpace(line)
		switch {
		case line == raceReportRule:
			inRace = !inRace
			continue
		case inRace:
			continue
		case strings.HasPrefix(line, "goroutine "):
			return joinCrash(parts)
		}
		if line != "" {
			parts = append(parts, strings.TrimPrefix(line, "panic: "))
		}
	}
	return joinCrash(parts)
}

// raceReportRule opens and closes each report of the race detector.
const raceReportRule = "=================="

func joinCrash(parts []string) string {
	if len(parts) == 0 {
		return "no output"
	}
	out := strings.Join(parts, "; ")
	if len(out) > maxCrashLine {
		out = out[:maxCrashLine] + "..."
	}
	return out
}

// maxCrashLine bounds what an error quotes of a crashed child.
const maxCrashLine = 500

// capped keeps the first max bytes written to it.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }

// precheck refuses a damaged file before a read-write open: nil for a
// missing or empty file and for one bbolt cannot open (its own open
// reports why), an error wrapping ErrLocked or ErrDamaged otherwise.
func (w *WAL) precheck() error {
	st, err := os.Stat(w.path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && st.Size() == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open wal %s: %w", w.path, err)
	}
	v, err := w.runCheck(checkRequest{Path: w.path, LockTimeout: w.opts.LockTimeout, Rows: true}, w.opts.CheckTimeout)
	switch {
	case err != nil:
		return fmt.Errorf("open wal %s: %w (`edge-agent db verify` checks the file)", w.path, err)
	case v.Locked:
		return fmt.Errorf("another edge-agent is using %s: %w", w.path, ErrLocked)
	case len(v.Damage) > 0:
		return damagedError(w.path, v.Damage, v.More)
	}
	return nil
}
