package identity

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/google/uuid"
)

// InstanceUID is the agent's OpAMP instance UID: a UUIDv7, kept in its own
// file next to the id file (see paths.InstanceUIDFile). It is not in the id
// file because that file keeps the Java agent's exact format. Like the ids,
// it lives outside the WAL, so a recreated WAL keeps it.
type InstanceUID [16]byte

// String is the canonical text form (8-4-4-4-12 hex digits).
func (u InstanceUID) String() string { return uuid.UUID(u).String() }

// LoadInstanceUID returns the UID stored at path, creating it (a new
// UUIDv7, written atomically) when the file does not exist yet. A file that
// holds anything but one UUID is an error naming the file: replacing it
// silently would make the fleet see a new agent.
func LoadInstanceUID(path string) (InstanceUID, error) {
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		return ParseInstanceUID(path, raw)
	case !errors.Is(err, fs.ErrNotExist):
		return InstanceUID{}, fmt.Errorf("read instance uid file: %w", err)
	}
	u, err := uuid.NewV7()
	if err != nil {
		return InstanceUID{}, fmt.Errorf("generate instance uid: %w", err)
	}
	if err := WriteAtomic(path, []byte(u.String()+"\n"), 0o640); err != nil {
		return InstanceUID{}, fmt.Errorf("instance uid: %w", err)
	}
	return InstanceUID(u), nil
}

// ParseInstanceUID reads the content of an instance uid file; name is the
// file, for the message.
func ParseInstanceUID(name string, raw []byte) (InstanceUID, error) {
	text := strings.TrimSpace(string(raw))
	u, err := uuid.Parse(text)
	if err != nil || len(text) != 36 {
		return InstanceUID{}, fmt.Errorf("%w %s: expected one UUID (8-4-4-4-12 hex digits); fix or delete the file (a new one makes the agent a new instance for its OpAMP server)", ErrCorrupt, name)
	}
	return InstanceUID(u), nil
}
