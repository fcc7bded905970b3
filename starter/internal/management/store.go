package management

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/identity"
)

// ErrCorruptRemote is wrapped when the persisted remote config cannot be
// read back.
var ErrCorruptRemote = errors.New("corrupt remote config file")

// Remote is the last config the OpAMP server offered and the agent
// applied: the agent.yaml it sent, and the hash the server gave it (the
// agent reports that hash back, so the server knows what runs).
type Remote struct {
	// Hash is the server's config hash (AgentRemoteConfig.config_hash).
	Hash []byte
	// YAML is the agent.yaml entry, as the server sent it.
	YAML      []byte
	AppliedAt time.Time
}

// remoteFile is the file's form: JSON, so the YAML is kept byte for byte
// (its line:column stay right) next to the server's binary hash.
type remoteFile struct {
	Hash      string    `json:"opamp_config_hash"`
	YAML      string    `json:"agent_yaml"`
	AppliedAt time.Time `json:"applied_at"`
}

// Store keeps the last applied remote config in one file (see
// paths.RemoteConfigFile), written atomically with mode 0600: it may hold
// tokens.
type Store struct{ Path string }

// Load returns the persisted remote config, or nil when there is none.
func (s Store) Load() (*Remote, error) {
	raw, err := os.ReadFile(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read remote config: %w", err)
	}
	return ParseRemote(s.Path, raw)
}

// Save replaces the persisted remote config.
func (s Store) Save(r Remote) error {
	data, err := json.Marshal(remoteFile{Hash: hex.EncodeToString(r.Hash), YAML: string(r.YAML), AppliedAt: r.AppliedAt.UTC()})
	if err != nil {
		return fmt.Errorf("save remote config: %w", err)
	}
	if err := identity.WriteAtomic(s.Path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("save remote config: %w", err)
	}
	return nil
}

// Remove forgets the remote config (the server withdrew it): the next
// start uses the local file alone.
func (s Store) Remove() error {
	if err := os.Remove(s.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove remote config: %w", err)
	}
	return nil
}

// ParseRemote reads the content of a remote config file; name is the file,
// for messages.
func ParseRemote(name string, raw []byte) (*Remote, error) {
	var f remoteFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%w %s: %w (delete it to start from the local config; the server sends its config again)", ErrCorruptRemote, name, err)
	}
	hash, err := hex.DecodeString(f.Hash)
	if err != nil || len(hash) == 0 || f.YAML == "" {
		return nil, fmt.Errorf("%w %s: needs opamp_config_hash (hex) and agent_yaml (delete it to start from the local config)", ErrCorruptRemote, name)
	}
	return &Remote{Hash: hash, YAML: []byte(f.YAML), AppliedAt: f.AppliedAt}, nil
}
