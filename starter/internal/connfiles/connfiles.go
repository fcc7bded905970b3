// Package connfiles keeps the connection settings a fleet server pushed:
// one JSON record per kind of connection ("edgesocket", "opamp") and the
// PEM files it names, side by side in one directory, written atomically
// and readable only by the agent's user. PEM files carry a short hash of
// the offer in their names, so the files of the settings in force stay
// until new ones are confirmed.
package connfiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/edge-agent/edge-agent/starter/internal/identity"
)

// PEM is one PEM file of an offer: its bytes (none: no file), the name it
// is stored under after the hash, and where its path is recorded.
type PEM struct {
	Data []byte
	Name string
	Path *string
}

// Stage writes each PEM with data as dir/<kind>-<hash, 12 hex digits>-<Name>
// and sets its Path.
func Stage(dir, kind, hash string, pems ...PEM) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	short := hash[:min(12, len(hash))]
	for _, p := range pems {
		if len(p.Data) == 0 {
			continue
		}
		*p.Path = filepath.Join(dir, kind+"-"+short+"-"+p.Name)
		if err := identity.WriteAtomic(*p.Path, p.Data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// File is where the JSON record of kind is kept.
func File(dir, kind string) string { return filepath.Join(dir, kind+".json") }

// ErrCorrupt is wrapped when a saved record does not decode, or lacks what
// its kind requires.
var ErrCorrupt = errors.New("corrupt")

// Load reads the record of kind that Save wrote: nil when none was saved;
// an error wrapping ErrCorrupt, naming the file, when it does not decode
// or complete rejects it.
func Load[T any](dir, kind string, complete func(*T) bool) (*T, error) {
	name := File(dir, kind)
	raw, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the saved %s connection settings: %w", kind, err)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrCorrupt, err)
	}
	if !complete(&v) {
		return nil, fmt.Errorf("%s: %w: a required field is missing", name, ErrCorrupt)
	}
	return &v, nil
}

// Save records v as the settings of kind in force and removes the kind's
// PEM files that keep does not name.
func Save(dir, kind string, v any, keep ...string) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := identity.WriteAtomic(File(dir, kind), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("save the %s connection settings: %w", kind, err)
	}
	Prune(dir, kind, keep...)
	return nil
}

// Prune removes the kind's PEM files that keep does not name. A file it
// cannot remove is left: a stale file is harmless.
func Prune(dir, kind string, keep ...string) {
	pems, _ := filepath.Glob(filepath.Join(dir, kind+"-*.pem"))
	for _, p := range pems {
		if !slices.Contains(keep, p) {
			_ = os.Remove(p)
		}
	}
}
