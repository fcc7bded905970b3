package dbcli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// Config is what `db` takes from agent.yaml.
type Config struct {
	// QueuePath is queue.path, absolute.
	QueuePath string
	// HTTP is the http section: where the running agent answers.
	HTTP api.Settings
	// Encryption is queue.encryption, its key read.
	Encryption wal.Encryption
}

// ErrAPIOff: the agent runs without its API, so db cannot ask it, and
// opening the file beside it is what bbolt forbids.
var ErrAPIOff = errors.New("the agent serves no API")

// source is where one command gets its answers: the running agent's API
// (client set) or the WAL file of a stopped agent.
type source struct {
	path string
	// enc holds the WAL's key: --key-file, else the config's.
	enc     wal.Encryption
	client  *api.Client
	pid     int
	running bool
}

// source decides between the API and the file. A bbolt file is open in
// one process at a time, so while the agent runs its WAL is read through
// the agent; a path other than the agent's own (--db-path at a copy, say)
// is opened directly.
func (r *runner) source(c *cli.Context) (*source, error) {
	s := &source{}
	s.pid, s.running = r.agentPID()
	explicit := r.explicitDBPath(c)
	cfg, cfgErr := r.loadConfig(c)
	if cfgErr == nil {
		s.enc = cfg.Encryption
	}
	if f := r.flagString(c, flagKeyFile); f != "" {
		enc, err := readKeyFile(r.resolve(f), "--"+flagKeyFile)
		if err != nil {
			return nil, err
		}
		s.enc = enc
	}
	switch {
	case explicit != "":
		s.path = explicit
	case cfgErr == nil:
		s.path = cfg.QueuePath
	case s.running:
		return nil, fmt.Errorf("the agent is running (pid %d) and db asks it through its API, which needs the config: %w", s.pid, cfgErr)
	case errors.Is(cfgErr, paths.ErrNoConfig):
		// No agent.yaml and nothing running: the default place.
		s.path = filepath.Join(r.env.Home, wal.DefaultPath)
	default:
		return nil, fmt.Errorf("config: %w (or name the WAL with --%s)", cfgErr, flagDBPath)
	}
	if !s.running {
		return s, nil
	}
	if cfgErr != nil {
		// Only --db-path gets here. Without the config the agent's WAL is
		// unknown: the file is opened, and bbolt's lock says whether the
		// agent holds it.
		return s, nil
	}
	if !sameFile(s.path, cfg.QueuePath) {
		return s, nil
	}
	if !cfg.HTTP.Enabled() {
		return nil, fmt.Errorf("the agent is running (pid %d) with http.listen: off; while it runs, db reaches its WAL only through that API (set http.listen in agent.yaml and restart the agent, or stop the agent): %w",
			s.pid, ErrAPIOff)
	}
	hs, err := cfg.HTTP.Local(r.pidFile())
	if err != nil {
		return nil, fmt.Errorf("the agent is running (pid %d): %w", s.pid, err)
	}
	client, err := api.NewClient(hs)
	if err != nil {
		return nil, err
	}
	s.client = client
	return s, nil
}

func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// loadConfig reads --config (or the default agent.yaml).
func (r *runner) loadConfig(c *cli.Context) (Config, error) {
	if r.env.LoadConfig == nil {
		return Config{}, paths.ErrNoConfig
	}
	var explicit string
	for _, lc := range c.Lineage() {
		if lc.IsSet(flagConfig) {
			explicit = lc.String(flagConfig)
			break
		}
	}
	return r.env.LoadConfig(explicit)
}

// needStopped refuses a command only a stopped agent allows.
func (s *source) needStopped(what string) error {
	if s.client != nil {
		return fmt.Errorf("the agent is running (pid %d): %s needs it stopped (stop the agent first)", s.pid, what)
	}
	return nil
}

// open opens the file read-only, with an error that says where the path
// came from when it does not exist.
func (r *runner) open(s *source) (*wal.WAL, error) {
	w, err := wal.Open(r.walOptions(s.path, true, s.enc))
	if errors.Is(err, wal.ErrNotFound) {
		return nil, fmt.Errorf("no WAL at %s (set --db-path, %s or queue.path in --config; the agent creates the WAL at its first start): %w", s.path, envDBPath, err)
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// read runs fn on the file, or returns from the API: every read command
// is these two calls.
func read[T any](r *runner, s *source, remote func(*api.Client) (T, error), local func(*wal.WAL) (T, error)) (T, error) {
	if s.client != nil {
		return remote(s.client)
	}
	var zero T
	w, err := r.open(s)
	if err != nil {
		return zero, err
	}
	defer w.Close()
	return local(w)
}
