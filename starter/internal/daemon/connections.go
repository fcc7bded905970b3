package daemon

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/connfiles"
	"github.com/edge-agent/edge-agent/starter/internal/management"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
)

// connectionVerifyTimeout is how long new edgesocket settings have to
// prove themselves (a Send or a probe the engine accepts) before they are
// rolled back.
const connectionVerifyTimeout = 15 * time.Second

// connectionsDir holds the edgesocket settings the OpAMP server set: one
// JSON file and the PEM files it names, mode 0600 (a token, a key),
// beside the saved remote config.
func connectionsDir(getenv func(string) string, home string) string {
	return filepath.Join(filepath.Dir(paths.RemoteConfigFile(getenv, home)), "edge-agent.connections")
}

// savedConnection is the JSON file's form.
type savedConnection struct {
	Hash      string    `json:"opamp_connection_settings_hash"`
	Endpoint  string    `json:"endpoint,omitempty"`
	Token     string    `json:"token,omitempty"`
	CertFile  string    `json:"cert_file,omitempty"`
	KeyFile   string    `json:"key_file,omitempty"`
	CAFile    string    `json:"ca_file,omitempty"`
	AppliedAt time.Time `json:"applied_at"`
}

func (s savedConnection) outputConnection() config.OutputConnection {
	id := s.Hash
	if len(id) > 12 {
		id = id[:12]
	}
	return config.OutputConnection{Endpoint: s.Endpoint, Token: s.Token, CertFile: s.CertFile, KeyFile: s.KeyFile, CAFile: s.CAFile, ID: id}
}

// connStore keeps the settings in force across restarts.
type connStore struct{ dir string }

// connKind names the output connection's files in the connections folder.
const connKind = "edgesocket"

func (st connStore) file() string { return connfiles.File(st.dir, connKind) }

// load returns the saved settings, or nil.
func (st connStore) load() (*savedConnection, error) {
	s, err := connfiles.Load(st.dir, connKind, func(s *savedConnection) bool { return s.Hash != "" })
	if errors.Is(err, connfiles.ErrCorrupt) {
		err = fmt.Errorf("the saved edgesocket connection settings: %w (delete the file to use the config's output settings)", err)
	}
	return s, err
}

// stage writes the offer's PEM files under names of its hash, so the
// settings in force keep their files until the new ones are confirmed.
func (st connStore) stage(o management.EdgeSocketOffer) (savedConnection, error) {
	s := savedConnection{Hash: hex.EncodeToString(o.Hash), Endpoint: o.Endpoint, Token: o.Token}
	err := connfiles.Stage(st.dir, connKind, s.Hash,
		connfiles.PEM{Data: o.Cert, Name: "cert.pem", Path: &s.CertFile},
		connfiles.PEM{Data: o.Key, Name: "key.pem", Path: &s.KeyFile},
		connfiles.PEM{Data: o.CA, Name: "ca.pem", Path: &s.CAFile})
	if err != nil {
		return s, fmt.Errorf("edgesocket connection settings: %w", err)
	}
	return s, nil
}

// save records s as in force and removes the PEM files no longer named.
func (st connStore) save(s savedConnection) error {
	return connfiles.Save(st.dir, connKind, s, s.CertFile, s.KeyFile, s.CAFile)
}

// remove forgets the settings (withdrawn) and their files.
func (st connStore) remove() error {
	if err := os.Remove(st.file()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the edgesocket connection settings: %w", err)
	}
	st.prune(savedConnection{})
	return nil
}

func (st connStore) prune(keep savedConnection) {
	connfiles.Prune(st.dir, connKind, keep.CertFile, keep.KeyFile, keep.CAFile)
}

// ApplyEdgeSocket is management.ConnectionApplier: the offer goes over
// the output section of the config in force through the reload path; the
// engine must then accept it within connectionVerifyTimeout (a Send that
// connects, or a probe while the output is idle), or the previous
// settings are put back. Only then are they saved. One change at a time
// with reloads: rl.mu is held throughout.
func (rl *reloader) ApplyEdgeSocket(ctx context.Context, o management.EdgeSocketOffer) error {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.connSaved != nil && rl.connSaved.Hash == hex.EncodeToString(o.Hash) {
		return nil // the server repeats its offer at every connection
	}
	prev := rl.conn
	if o.Withdraw() {
		rl.conn = nil
		if err := rl.apply(ctx, rl.plain); err != nil {
			rl.conn = prev
			return fmt.Errorf("go back to the config's output settings: %w", err)
		}
		rl.connSaved = nil
		return rl.connStore.remove()
	}
	staged, err := rl.connStore.stage(o)
	if err != nil {
		return err
	}
	oc := staged.outputConnection()
	rl.conn = &oc
	if err := rl.apply(ctx, rl.plain); err != nil {
		rl.conn = prev
		rl.connStore.prune(rl.savedOrEmpty())
		return err
	}
	if err := rl.verifyOutput(ctx, connectionVerifyTimeout); err != nil {
		rl.conn = prev
		rl.logger.Error("the engine did not take the new edgesocket settings; going back to the previous ones", "error", err, "endpoint", o.Endpoint)
		if rerr := rl.apply(context.WithoutCancel(ctx), rl.plain); rerr != nil {
			return fmt.Errorf("%w; and going back failed too: %w", err, rerr)
		}
		rl.connStore.prune(rl.savedOrEmpty())
		return fmt.Errorf("rolled back: %w", err)
	}
	staged.AppliedAt = time.Now().UTC()
	rl.connSaved = &staged
	if err := rl.connStore.save(staged); err != nil {
		rl.logger.Error("edgesocket settings in force but not saved for the next start", "error", err)
	}
	return nil
}

func (rl *reloader) savedOrEmpty() savedConnection {
	if rl.connSaved == nil {
		return savedConnection{}
	}
	return *rl.connSaved
}

// verifyOutput waits until the output in force shows the engine accepts
// it: the agent's own Send connected, or, while it has nothing to send, a
// probe (connect, TLS, token) with the same settings succeeded. A refusal
// (AUTH_FAILED, DECRYPT_FAILED) fails at once; anything else by timeout.
// rl.mu is held.
func (rl *reloader) verifyOutput(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	var probed time.Time
	for {
		st := rl.rt.Snapshot()
		switch st.Connection {
		case "connected":
			return nil
		case "auth_failed", "decrypt_failed":
			return fmt.Errorf("the engine refused the agent (%s): %s", st.Connection, st.LastError)
		case "unavailable":
			lastErr = errors.New(st.LastError)
		case "idle":
			idle := st.Queue.Pending+st.Queue.Sending == 0
			if idle && time.Since(probed) >= time.Second {
				probed = time.Now()
				err := rl.probe(ctx)
				switch {
				case err == nil:
					return nil
				case transport.IsFatal(err):
					return fmt.Errorf("the engine refused the agent: %w", err)
				case !errors.Is(err, transport.ErrRejected): // REJECTED: the agent's own session holds it
					lastErr = err
				}
			}
		}
		select {
		case <-ctx.Done():
			if lastErr == nil {
				lastErr = errors.New("no Send or probe reached it")
			}
			return fmt.Errorf("the engine was not reached within %s: %w", timeout, lastErr)
		case <-tick.C:
		}
	}
}

// probe checks the output in force with a client of its own.
func (rl *reloader) probe(ctx context.Context) error {
	cfg := rl.cur
	f, err := rl.load.Outputs.Get(cfg.Output.Type)
	if err != nil {
		return err
	}
	snd, _, err := f.Create(cfg.Output.Options, output.Settings{ID: cfg.Output.ID, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer snd.Close()
	p, ok := snd.(interface {
		Probe(ctx context.Context) client.ProbeResult
	})
	if !ok {
		return fmt.Errorf("output.type %s cannot be probed", cfg.Output.Type)
	}
	return p.Probe(ctx).Err()
}

// applySavedConnection puts the saved edgesocket settings over the config
// in force at start, when management is on.
func (sc *startConfig) applySavedConnection(store connStore) {
	sc.plain = sc.cfg
	if !sc.local.Management.Enabled() {
		return
	}
	saved, err := store.load()
	if err == nil && saved != nil {
		var cfg *config.Config
		if cfg, err = sc.cfg.WithOutputConnection(saved.outputConnection()); err == nil {
			sc.cfg, sc.conn = cfg, saved
			return
		}
	}
	if err != nil {
		sc.notes = append(sc.notes, func(l *slog.Logger) {
			l.Error("the saved edgesocket connection settings are not used; the output takes the config's", "error", err)
		})
	}
}
