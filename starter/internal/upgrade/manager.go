package upgrade

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/edge-agent/edge-agent/transport/backoff"
)

// Defaults of management.opamp.packages.*.
const (
	DefaultMaxSizeMB      = 256
	DefaultHealthDeadline = 2 * time.Minute
	// checkTimeout bounds `version` and `config check` of a staged binary.
	checkTimeout = 30 * time.Second
)

// Offer is the top-level package the server offers.
type Offer struct {
	Name    string
	Version string
	URL     string
	Header  http.Header
	// SHA256 is the file's content hash, Signature the ed25519 signature
	// of Message(Version, SHA256, allow-downgrade).
	SHA256, Signature []byte
	// Hash is the server's package hash, AllHash its all-packages hash;
	// both are reported back as they came.
	Hash, AllHash []byte
}

// Phase is where an offer stands.
type Phase int

const (
	Downloading Phase = iota + 1
	Installing
	Installed
	InstallFailed
)

func (p Phase) String() string {
	switch p {
	case Downloading:
		return "Downloading"
	case Installing:
		return "Installing"
	case Installed:
		return "Installed"
	case InstallFailed:
		return "InstallFailed"
	}
	return "none"
}

// Report is one status of an offer.
type Report struct {
	Offer       Offer
	Phase       Phase
	Error       string
	Done, Total int64 // bytes, while Downloading (Total -1: unknown)
}

// Options configure a Manager.
type Options struct {
	Layout    Layout
	PublicKey ed25519.PublicKey
	MaxSize   int64
	// HealthDeadline is how long a new version has to report healthy.
	HealthDeadline time.Duration
	// Self is the running version and its binary.
	Self Slot
	// Home is the install root, ConfigPath the local config: the staged
	// binary must pass `config check` of it.
	Home, ConfigPath string
	HTTP             *http.Client
	// Report is told every change of an offer's status.
	Report func(Report)
	// Restart is the restart path: a graceful stop (the WAL closed), after
	// which the launcher starts the trial.
	Restart func()
	Log     *slog.Logger
	Now     func() time.Time
	// RetryPause is the first pause before a cut download resumes; zero
	// means one second.
	RetryPause time.Duration
	// Run runs a staged binary for its checks; nil runs it for real.
	Run func(ctx context.Context, env []string, bin string, args ...string) ([]byte, error)
}

// Manager installs offers one at a time.
type Manager struct {
	o    Options
	mu   sync.Mutex
	busy string // hex of the offer's SHA256 under way
}

// NewManager checks the options and fills in defaults.
func NewManager(o Options) (*Manager, error) {
	if len(o.PublicKey) != ed25519.PublicKeySize {
		return nil, errors.New("upgrade: a public key is required")
	}
	if o.Restart == nil || o.Report == nil {
		return nil, errors.New("upgrade: Restart and Report are required")
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxSizeMB << 20
	}
	if o.HealthDeadline <= 0 {
		o.HealthDeadline = DefaultHealthDeadline
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Run == nil {
		o.Run = runBinary
	}
	return &Manager{o: o}, nil
}

// Status is the versions part of `edge-agent status`.
type Status struct {
	Running  string   `json:"running"`
	Previous string   `json:"previous,omitempty"`
	Trial    string   `json:"trial,omitempty"`
	Last     *Outcome `json:"last_offer,omitempty"`
}

// ReadStatus reads the versions from the layout; running is this
// binary's version.
func ReadStatus(l Layout, running string) Status {
	st, err := l.Load()
	out := Status{Running: running}
	if err != nil {
		return out
	}
	if st.Previous != nil {
		out.Previous = st.Previous.Version
	} else if st.Trial != nil {
		out.Previous = st.Current.Version
	}
	if st.Trial != nil {
		out.Trial = st.Trial.Version
	}
	out.Last = st.Last
	return out
}

// Known is the report of the last outcome at start: the server learns
// how the last offer ended (the process that staged it did not live to
// tell). Nil when nothing was ever offered.
func (m *Manager) Known() *Report {
	st, err := m.o.Layout.Load()
	if err != nil {
		return nil
	}
	return known(st)
}

func known(st State) *Report {
	if t := st.Trial; t != nil {
		return &Report{Offer: Offer{Name: t.Name, Version: t.Version, Hash: t.Hash, AllHash: t.AllHash}, Phase: Installing}
	}
	o := st.Last
	if o == nil {
		return nil
	}
	r := &Report{Offer: Offer{Name: o.Name, Version: o.Version, Hash: o.Hash, AllHash: o.AllHash}, Phase: Installed}
	if o.Failed {
		r.Phase, r.Error = InstallFailed, o.Error
	}
	return r
}

// Handle takes an offer: it returns at once when the same file is
// already being installed, or the offer was installed or refused
// before; else it runs the install to its end (download, checks, stage,
// switch, restart) and reports each step.
func (m *Manager) Handle(ctx context.Context, o Offer) {
	key := hex.EncodeToString(o.SHA256)
	m.mu.Lock()
	if m.busy != "" {
		m.mu.Unlock()
		return
	}
	m.busy = key
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.busy = ""
		m.mu.Unlock()
	}()
	if st, err := m.o.Layout.Load(); err == nil && st.Trial != nil {
		// A trial is under way: its verdict comes first, and the server
		// hears of it; a new offer is taken once it is over.
		r := known(st)
		r.Offer.AllHash = o.AllHash
		m.o.Report(*r)
		return
	} else if err == nil && st.Last != nil && st.Last.Version == o.Version && bytes.Equal(st.Last.Hash, o.Hash) {
		// The server repeats its offer at every connection: tell it again
		// how this one ended.
		if r := known(st); r != nil {
			r.Offer.AllHash = o.AllHash
			m.o.Report(*r)
		}
		return
	}
	if o.Version == m.o.Self.Version {
		m.o.Report(Report{Offer: o, Phase: Installed})
		return
	}
	if err := m.install(ctx, o); err != nil {
		if ctx.Err() != nil {
			return // stopping: the download resumes at the next start
		}
		m.o.Log.Error("package refused", "version", o.Version, "error", err.Error())
		m.o.Report(Report{Offer: o, Phase: InstallFailed, Error: err.Error()})
		st, lerr := m.o.Layout.Load()
		if lerr == nil {
			st.Last = &Outcome{Version: o.Version, Hash: o.Hash, AllHash: o.AllHash, Name: o.Name, Failed: true, Error: err.Error(), At: m.o.Now()}
			if serr := m.o.Layout.Save(st); serr != nil {
				m.o.Log.Warn("could not record the refused package", "error", serr)
			}
		}
	}
}

func (m *Manager) install(ctx context.Context, o Offer) error {
	if !ValidVersion(o.Version) {
		return fmt.Errorf("version %q is not a semantic version (major.minor.patch)", o.Version)
	}
	if o.URL == "" || len(o.SHA256) != 32 {
		return errors.New("the offer needs a download URL and a 32-byte SHA-256 content hash")
	}
	allowDown, err := Verify(m.o.PublicKey, o.Version, o.SHA256, o.Signature)
	if err != nil {
		return err
	}
	if !Newer(o.Version, m.o.Self.Version) && !allowDown {
		return fmt.Errorf("downgrade from %s to %s refused: the signature does not allow it (sign with --allow-downgrade)", m.o.Self.Version, o.Version)
	}
	m.o.Log.Info("downloading a new version", "version", o.Version, "url", o.URL)
	m.o.Report(Report{Offer: o, Phase: Downloading, Total: -1})
	part := m.o.Layout.Partial(hex.EncodeToString(o.SHA256))
	last := time.Time{}
	progress := func(done, total int64) {
		if now := m.o.Now(); now.Sub(last) >= time.Second {
			last = now
			m.o.Report(Report{Offer: o, Phase: Downloading, Done: done, Total: total})
		}
	}
	if err := m.fetch(ctx, o, part, progress); err != nil {
		return err
	}
	m.o.Report(Report{Offer: o, Phase: Installing})
	bin, err := m.stage(part, o.Version)
	if err != nil {
		return err
	}
	if err := m.check(ctx, bin, o.Version); err != nil {
		_ = os.RemoveAll(filepath.Dir(filepath.Dir(bin)))
		return err
	}
	// The switch: one atomic rename of state.json. Before it the old
	// version starts; after it the launcher tries the new one.
	st, err := m.o.Layout.Load()
	if err != nil {
		return err
	}
	if st.Current.Path == "" {
		st.Current = m.o.Self
	}
	st.Trial = &Trial{Slot: Slot{Version: o.Version, Path: bin}, Hash: o.Hash, AllHash: o.AllHash, Name: o.Name, StagedAt: m.o.Now(), Deadline: Duration(m.o.HealthDeadline)}
	if err := m.o.Layout.Save(st); err != nil {
		return err
	}
	_ = os.Remove(part)
	m.o.Log.Info("new version staged; restarting into its trial", "version", o.Version, "binary", bin,
		"health_deadline", m.o.HealthDeadline.String())
	m.o.Restart()
	return nil
}

// downloadAttempts bounds the tries of one offer's download; each
// resumes where the last one was cut.
const downloadAttempts = 6

// fetch downloads with retries: a cut or a server error is tried again
// after a growing pause, resuming; a wrong hash or size is final.
func (m *Manager) fetch(ctx context.Context, o Offer, part string, progress func(done, total int64)) error {
	pause := backoff.Policy{Initial: m.retryPause(), Max: 32 * m.retryPause()}
	var err error
	for attempt := range downloadAttempts {
		if err = download(ctx, m.o.HTTP, o.URL, o.Header, part, m.o.MaxSize, o.SHA256, progress); err == nil ||
			errors.Is(err, ErrHash) || errors.Is(err, ErrTooLarge) || ctx.Err() != nil {
			return err
		}
		wait := pause.Jittered(attempt)
		m.o.Log.Warn("package download cut; resuming", "version", o.Version, "error", err.Error(), "retry_in", wait.String())
		if backoff.Sleep(ctx, wait) != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("%w (after %d attempts)", err, downloadAttempts)
}

func (m *Manager) retryPause() time.Duration {
	if m.o.RetryPause > 0 {
		return m.o.RetryPause
	}
	return time.Second
}

// stage moves the verified download to versions/<v>/bin/edge-agent.
func (m *Manager) stage(part, version string) (string, error) {
	bin := m.o.Layout.Binary(version)
	if err := os.MkdirAll(filepath.Dir(bin), 0o750); err != nil {
		return "", fmt.Errorf("stage %s: %w", version, err)
	}
	if err := os.Chmod(part, 0o750); err != nil {
		return "", fmt.Errorf("stage %s: %w", version, err)
	}
	if err := os.Rename(part, bin); err != nil {
		return "", fmt.Errorf("stage %s: %w", version, err)
	}
	if d, err := os.Open(filepath.Dir(bin)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return bin, nil
}

// check runs the staged binary: `version` must name the offered version,
// and `config check` must accept the config in force.
func (m *Manager) check(ctx context.Context, bin, version string) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	env := append(os.Environ(), "EDGE_AGENT_HOME="+m.o.Home)
	out, err := m.o.Run(ctx, env, bin, "version")
	if err != nil {
		return fmt.Errorf("the new binary does not run (`version`): %w: %s", err, firstLine(out))
	}
	if got := firstLine(out); got != "edge-agent "+version {
		return fmt.Errorf("the new binary says %q, the offer says version %s", got, version)
	}
	args := []string{"config", "check"}
	if m.o.ConfigPath != "" {
		args = append(args, m.o.ConfigPath)
	}
	if out, err := m.o.Run(ctx, env, bin, args...); err != nil {
		return fmt.Errorf("the new binary rejects the config in force (`config check`): %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func runBinary(ctx context.Context, env []string, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.Bytes(), err
}

func firstLine(b []byte) string {
	line, err := bufio.NewReader(bytes.NewReader(b)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	return strings.TrimSpace(line)
}
