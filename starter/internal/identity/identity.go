package identity

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// IDs are the agent's three ids. An empty field means "not chosen".
type IDs struct {
	Agent  string
	Input  string
	Output string
}

// Keys in the id file, in the order they are written.
const (
	KeyAgent  = "agent.id"
	KeyInput  = "input.id"
	KeyOutput = "output.id"
)

// ErrCorrupt is wrapped when the id file cannot be parsed.
var ErrCorrupt = errors.New("corrupt id file")

// Resolve returns the ids to use: each explicit id wins; otherwise the id
// stored in the file at path; otherwise a new random UUIDv4. The file is
// (re)written when its content would change, so it always ends up holding
// exactly the returned ids (explicit ones included, as the Java agent
// does). Its parent directory is created when missing.
func Resolve(path string, explicit IDs) (IDs, error) {
	stored, raw, err := read(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return IDs{}, err
	}
	ids := IDs{
		Agent:  pick(explicit.Agent, stored.Agent),
		Input:  pick(explicit.Input, stored.Input),
		Output: pick(explicit.Output, stored.Output),
	}
	for _, p := range []*string{&ids.Agent, &ids.Input, &ids.Output} {
		if *p == "" {
			if *p, err = NewUUID(); err != nil {
				return IDs{}, err
			}
		}
	}
	if want := Format(ids); !bytes.Equal(raw, want) {
		// Group-readable so monitoring in the agent's group can tell
		// which agent this is; nobody else needs it.
		if err := WriteAtomic(path, want, 0o640); err != nil {
			return IDs{}, err
		}
	}
	return ids, nil
}

// Read returns the ids stored in the file at path, writing nothing: for
// tools that name the agent without being it. Errors as read's.
func Read(path string) (IDs, error) {
	ids, _, err := read(path)
	return ids, err
}

func pick(explicit, stored string) string {
	if v := strings.TrimSpace(explicit); v != "" {
		return v
	}
	return stored
}

// read parses the id file and returns its bytes too, so Resolve rewrites
// only on change. A missing file returns an error wrapping fs.ErrNotExist;
// a malformed one an error wrapping ErrCorrupt that names the file and
// line. Keys may be missing (they are then empty); blank lines and `#`/`!`
// comments (properties syntax) are tolerated.
func read(path string) (ids IDs, raw []byte, err error) {
	raw, err = os.ReadFile(path)
	if err != nil {
		return IDs{}, nil, fmt.Errorf("read id file: %w", err)
	}
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' || text[0] == '!' {
			continue
		}
		key, val, ok := strings.Cut(text, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok {
			return IDs{}, nil, corrupt(path, line, "expected key=value")
		}
		if prev, dup := seen[key]; dup {
			return IDs{}, nil, corrupt(path, line, fmt.Sprintf("%s already set on line %d", key, prev))
		}
		seen[key] = line
		if val == "" {
			return IDs{}, nil, corrupt(path, line, key+" is empty")
		}
		switch key {
		case KeyAgent:
			ids.Agent = val
		case KeyInput:
			ids.Input = val
		case KeyOutput:
			ids.Output = val
		default:
			return IDs{}, nil, corrupt(path, line, fmt.Sprintf("unknown key %q (want %s, %s or %s)", key, KeyAgent, KeyInput, KeyOutput))
		}
	}
	if err := sc.Err(); err != nil {
		// Only an absurdly long line gets here.
		return IDs{}, nil, fmt.Errorf("%w %s: %v", ErrCorrupt, path, err)
	}
	return ids, raw, nil
}

func corrupt(path string, line int, msg string) error {
	return fmt.Errorf("%w %s:%d: %s (fix or delete the file; ids in agent.yaml win)", ErrCorrupt, path, line, msg)
}

// Format renders ids in the Java agent's exact format: three lines, no
// header, "\n" line ends.
func Format(ids IDs) []byte {
	return []byte(KeyAgent + "=" + ids.Agent + "\n" +
		KeyInput + "=" + ids.Input + "\n" +
		KeyOutput + "=" + ids.Output + "\n")
}

// NewUUID returns a random (version 4, RFC 9562) UUID from crypto/rand.
func NewUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// WriteAtomic replaces path with data, with permissions perm, so that
// readers see the old or the new file, never a torn one, even across a
// power cut: the temp file is synced before the rename and the directory
// after it. The identity files and the persisted remote config use it.
// When path is a symlink, the file it points to is replaced and the link
// kept: the temp file goes beside the target, in the folder the writer
// owns, not beside the link (a package links /opt into /var/lib).
func WriteAtomic(path string, data []byte, perm os.FileMode) (err error) {
	if path, err = followLinks(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return syncDir(dir)
}

// maxLinks bounds followLinks, as the kernel bounds a lookup (ELOOP).
const maxLinks = 40

// followLinks returns the file that path names once its symlinks are
// followed, even when the last target does not exist yet (a fresh
// install's link to an id file not written yet). Only the last component
// is followed: a link among the folders is resolved by the kernel anyway.
func followLinks(path string) (string, error) {
	for range maxLinks {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		target, err := os.Readlink(path)
		if err != nil {
			return "", fmt.Errorf("write %s: %w", path, err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return "", fmt.Errorf("write %s: more than %d symlinks", path, maxLinks)
}

// syncDir makes the rename durable. Some filesystems refuse to fsync a
// directory; the rename itself has happened, so that is not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}
