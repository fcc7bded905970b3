package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/dbview"
	"github.com/edge-agent/edge-agent/starter/internal/diag"
	"github.com/edge-agent/edge-agent/starter/internal/logging"
	"github.com/edge-agent/edge-agent/starter/internal/management"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// diagnostics builds the bundle of a running agent: the one
// `edge-agent diagnostics` fetches over the API and the OpAMP server asks
// for as a task.
type diagnostics struct {
	rl    *reloader
	rt    *agent.Agent
	ring  *logging.Ring
	build Build
	mgmt  func() *api.Management
	now   func() time.Time
}

// Bundle returns the .tar.gz: the effective config (redacted, as the
// OpAMP server sees it), /debug/status and /metrics as the API would
// serve them (built here, so the bundle exists with http.listen off too),
// the recent log records, the WAL summary, every goroutine's stack and
// the build.
func (d *diagnostics) Bundle(ctx context.Context) ([]byte, error) {
	var b diag.Bundle
	cfg := d.rl.current()
	b.Add("config.yaml", cfg.EffectiveYAML())
	o := api.Options{
		Source: d.rt, Version: d.build.Version, Commit: d.build.Commit, ConfigHash: cfg.Hash,
		Management: d.mgmt, WALPath: cfg.Queue.Path,
	}
	if body, err := api.StatusJSON(o); err != nil {
		b.Missing("status.json", err)
	} else {
		b.Add("status.json", body)
	}
	// The handler without http.token, where /metrics is open: it is never
	// served, only asked here.
	if body, err := get(ctx, api.Handler(o), "/metrics"); err != nil {
		b.Missing("metrics.txt", err)
	} else {
		b.Add("metrics.txt", body)
	}
	if d.ring != nil {
		b.Add("log-recent.jsonl", diag.Lines(d.ring.Lines()))
	}
	if w := d.rt.WAL(); w != nil {
		if s, err := dbview.ReadSummary(w); err != nil {
			b.Missing("wal-summary.json", err)
		} else {
			b.AddJSON("wal-summary.json", s)
		}
	} else {
		b.Note("wal-summary.json: the agent has no WAL open (delivery NON, or starting or stopping)")
	}
	b.Add("goroutines.txt", diag.Goroutines())
	b.Add("version.txt", diag.Version(d.build.Version, d.build.Commit))
	return b.TarGz(d.now())
}

// get serves one GET from h in memory.
func get(ctx context.Context, h http.Handler, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	h.ServeHTTP(rec, req)
	if rec.code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, rec.code, bytes.TrimSpace(rec.body.Bytes()))
	}
	return rec.body.Bytes(), nil
}

// recorder is the smallest http.ResponseWriter that keeps the answer.
type recorder struct {
	header http.Header
	body   bytes.Buffer
	code   int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(p []byte) (int, error) { return r.body.Write(p) }
func (r *recorder) WriteHeader(code int)        { r.code = code }

// StoppedBundle is the bundle of an agent that does not run, read from
// its files: the local config (and the saved remote config, both
// redacted), the backlog from the WAL opened read-only, its summary, the
// last log records of log.file, and this binary's build. There is no
// status, metrics or goroutine dump of a process that does not exist; the
// manifest says so.
func StoppedBundle(cfg *config.Config, home string, getenv func(string) string, build Build, now time.Time) ([]byte, error) {
	var b diag.Bundle
	b.Add("config.yaml", cfg.EffectiveYAML())
	rem, err := management.Store{Path: paths.RemoteConfigFile(getenv, home)}.Load()
	switch {
	case err != nil:
		b.Missing("remote-config.yaml", err)
	case rem != nil:
		red, err := config.RedactYAML(rem.YAML)
		if err != nil {
			b.Missing("remote-config.yaml", err)
		} else {
			b.Add("remote-config.yaml", red)
		}
	}
	b.Note("the agent is not running: no status, metrics or goroutine dump")
	w, err := wal.Open(wal.Options{Path: cfg.Queue.Path, ReadOnly: true, Fsync: true, Encryption: cfg.Queue.Encryption})
	if err != nil {
		b.Missing("wal-summary.json", err)
	} else {
		if s, err := dbview.ReadSummary(w); err != nil {
			b.Missing("wal-summary.json", err)
		} else {
			b.AddJSON("wal-summary.json", s)
		}
		_ = w.Close() // read-only: nothing to lose
	}
	logPath := logFile(cfg.Log.File, home, getenv)
	if lines, err := tailLines(logPath, logging.DefaultRingLines); err != nil {
		b.Missing("log-recent.jsonl", err)
	} else {
		b.Add("log-recent.jsonl", diag.Lines(lines))
	}
	b.Add("version.txt", diag.Version(build.Version, build.Commit))
	return b.TarGz(now)
}

// tailLines returns the last n lines of the file, reading at most its
// last diag.MaxFileBytes.
func tailLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(0, st.Size()-diag.MaxFileBytes)
	data := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) == 0 {
		return nil, nil
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if off > 0 && len(lines) > 0 {
		lines = lines[1:] // cut in the middle
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}
