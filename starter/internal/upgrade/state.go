package upgrade

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/identity"
)

// EnvTrial is set in the environment of a version on trial, to its
// version: it confirms itself once healthy (see Confirm).
const EnvTrial = "EDGE_AGENT_UPGRADE_TRIAL"

// InTrial reports whether this process is a version on trial: it must
// not convert anything the previous version could not read back (the WAL
// contract of the package doc).
func InTrial(getenv func(string) string) bool { return getenv(EnvTrial) != "" }

// MaxTrialStarts bounds how often one trial is started without
// confirming (kill -9, a reboot, a stop) before it is rolled back.
const MaxTrialStarts = 3

// Layout names the files under the state directory.
type Layout struct {
	// Dir is the writable state directory (the id file's folder).
	Dir string
}

// Root is versions/ under the state directory.
func (l Layout) Root() string { return filepath.Join(l.Dir, "versions") }

// StateFile is versions/state.json.
func (l Layout) StateFile() string { return filepath.Join(l.Root(), "state.json") }

// Binary is where version v is staged.
func (l Layout) Binary(v string) string { return filepath.Join(l.Root(), v, "bin", binaryName) }

// Partial is the download under way of the file with hash sha (hex).
func (l Layout) Partial(shaHex string) string {
	return filepath.Join(l.Root(), "download", shaHex+".part")
}

// Slot is one runnable version.
type Slot struct {
	Version string `json:"version"`
	Path    string `json:"path"` // absolute path of its binary
}

// Trial is a new version being tried.
type Trial struct {
	Slot
	// Hash is the server's package hash, reported back.
	Hash    []byte `json:"hash,omitempty"`
	AllHash []byte `json:"all_packages_hash,omitempty"`
	Name    string `json:"name,omitempty"`
	// Starts counts the trial's starts so far.
	Starts    int       `json:"starts"`
	StagedAt  time.Time `json:"staged_at"`
	Deadline  Duration  `json:"health_deadline_ms"`
	Requested string    `json:"requested_by,omitempty"`
}

// Outcome is the fate of the last offer, reported to the server.
type Outcome struct {
	Version string    `json:"version"`
	Hash    []byte    `json:"hash,omitempty"`
	AllHash []byte    `json:"all_packages_hash,omitempty"`
	Name    string    `json:"name,omitempty"`
	Failed  bool      `json:"failed"`
	Error   string    `json:"error,omitempty"`
	At      time.Time `json:"at"`
}

// State is versions/state.json. Its zero value (no file) means the
// installed binary runs and nothing was ever upgraded.
type State struct {
	// Current is what a start runs; zero: the installed binary.
	Current Slot `json:"current"`
	// Previous is kept for a rollback; nil when there is none.
	Previous *Slot    `json:"previous,omitempty"`
	Trial    *Trial   `json:"trial,omitempty"`
	Last     *Outcome `json:"last,omitempty"`
}

// Duration is milliseconds in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatInt(time.Duration(d).Milliseconds(), 10)), nil
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("duration: want milliseconds: %w", err)
	}
	*d = Duration(time.Duration(n) * time.Millisecond)
	return nil
}

// Load reads the state; a missing file is the zero State.
func (l Layout) Load() (State, error) {
	raw, err := os.ReadFile(l.StateFile())
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("read upgrade state: %w", err)
	}
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		return State{}, fmt.Errorf("upgrade state %s: %w (delete it to run the installed binary)", l.StateFile(), err)
	}
	return st, nil
}

// Save replaces the state atomically: a crash leaves the old or the new.
func (l Layout) Save(st State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("save upgrade state: %w", err)
	}
	if err := os.MkdirAll(l.Root(), 0o750); err != nil {
		return fmt.Errorf("save upgrade state: %w", err)
	}
	if err := identity.WriteAtomic(l.StateFile(), append(data, '\n'), 0o640); err != nil {
		return fmt.Errorf("save upgrade state: %w", err)
	}
	return nil
}

// Action is what a start does.
type Action int

const (
	// RunSelf: this binary is the one to run.
	RunSelf Action = iota
	// ExecOther: replace this process with Decision.Path.
	ExecOther
	// SuperviseTrial: run Decision.Trial as a child (Supervise).
	SuperviseTrial
)

// Decision is Decide's answer; Save, when set, must be written first.
type Decision struct {
	Action Action
	Path   string
	Save   *State
	Note   string // for the log
}

// Decide is the launcher's choice at `start`. self is this binary;
// installed is bin/edge-agent of the install root. A package upgrade
// (the installed binary newer than what state.json names) wins over a
// self-upgrade: the state is dropped and the installed binary runs.
func Decide(st State, self, installed Slot) Decision {
	if st.Trial == nil && st.Current.Path == "" {
		return Decision{Action: RunSelf}
	}
	if samePath(self.Path, installed.Path) && Newer(installed.Version, st.Current.Version) &&
		(st.Trial == nil || Newer(installed.Version, st.Trial.Version)) {
		return Decision{Action: RunSelf, Save: &State{Last: st.Last},
			Note: "the installed binary is newer than the self-upgraded one (a package upgrade): running it"}
	}
	if st.Trial != nil {
		return Decision{Action: SuperviseTrial, Path: st.Trial.Path}
	}
	if samePath(self.Path, st.Current.Path) {
		return Decision{Action: RunSelf}
	}
	return Decision{Action: ExecOther, Path: st.Current.Path}
}

func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// Newer reports whether version a is newer than b, both semantic
// versions (an optional v, major.minor.patch, an optional -pre-release,
// which sorts before the release). Anything else is never newer.
func Newer(a, b string) bool {
	x, okA := parseVersion(a)
	y, okB := parseVersion(b)
	if !okA || !okB {
		return false
	}
	for i := range 3 {
		if x.n[i] != y.n[i] {
			return x.n[i] > y.n[i]
		}
	}
	switch {
	case x.pre == y.pre:
		return false
	case x.pre == "":
		return true
	case y.pre == "":
		return false
	}
	return x.pre > y.pre
}

type semver struct {
	n   [3]int
	pre string
}

func parseVersion(s string) (semver, bool) {
	var v semver
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	s, _, _ = strings.Cut(s, "+")
	s, v.pre, _ = strings.Cut(s, "-")
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v.n[i] = n
	}
	return v, true
}

// ValidVersion reports whether s can name a version directory: a
// semantic version, nothing that could climb out of versions/.
func ValidVersion(s string) bool {
	_, ok := parseVersion(s)
	return ok && !strings.ContainsAny(s, `/\`) && s != "." && s != ".."
}
