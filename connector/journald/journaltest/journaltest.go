// Package journaltest makes real journal files for tests: entries written
// in the journal export format are turned into journal files by
// systemd-journal-remote, and journalctl reads them back
// (journalctl --directory or --file).
//
// The tools come from Debian's systemd (journalctl) and
// systemd-journal-remote packages. Without them Tools fails the test under
// CI=true and skips it, saying why, elsewhere.
package journaltest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// BootID is the _BOOT_ID of the entries Entry builds: one boot, so the
// journal orders them by their monotonic time as well.
const BootID = "0123456789abcdef0123456789abcdef"

// Base is the realtime of entry 0 (2023-11-14T22:13:20Z); entry n is n
// milliseconds later.
var Base = time.UnixMicro(1_700_000_000_000_000).UTC()

// Field is one field of an entry; Value may hold any bytes.
type Field struct {
	Name  string
	Value []byte
}

// Entry is one journal entry, its fields in order.
type Entry []Field

// NewEntry returns entry n of a test journal: realtime Base+n ms,
// monotonic n+1 ms, the given MESSAGE and _SYSTEMD_UNIT, then extra
// fields as name, value pairs.
func NewEntry(n int, unit, msg string, extra ...string) Entry {
	e := Entry{
		{"__REALTIME_TIMESTAMP", fmt.Appendf(nil, "%d", Base.UnixMicro()+int64(n)*1000)},
		{"__MONOTONIC_TIMESTAMP", fmt.Appendf(nil, "%d", int64(n+1)*1000)},
		{"_BOOT_ID", []byte(BootID)},
		{"MESSAGE", []byte(msg)},
		{"PRIORITY", []byte("6")},
	}
	if unit != "" {
		e = append(e, Field{"_SYSTEMD_UNIT", []byte(unit)})
	}
	for i := 0; i+1 < len(extra); i += 2 {
		e = append(e, Field{extra[i], []byte(extra[i+1])})
	}
	return e
}

// AppendExport appends entries in the export format: the line form for a
// value without a newline, else the length-prefixed binary form.
func AppendExport(dst []byte, entries ...Entry) []byte {
	for _, e := range entries {
		for _, f := range e {
			dst = append(dst, f.Name...)
			if bytes.IndexByte(f.Value, '\n') < 0 {
				dst = append(dst, '=')
				dst = append(dst, f.Value...)
			} else {
				dst = append(dst, '\n')
				dst = binary.LittleEndian.AppendUint64(dst, uint64(len(f.Value)))
				dst = append(dst, f.Value...)
			}
			dst = append(dst, '\n')
		}
		dst = append(dst, '\n')
	}
	return dst
}

// Paths are the tools' locations.
type Paths struct {
	Journalctl, Remote string
}

// Tools finds journalctl and systemd-journal-remote (which Debian installs
// outside PATH, in /lib/systemd). Without them it fails tb under CI=true
// and skips it otherwise.
func Tools(tb testing.TB) Paths {
	tb.Helper()
	var p Paths
	var missing []string
	if jc, err := exec.LookPath("journalctl"); err == nil {
		p.Journalctl = jc
	} else {
		missing = append(missing, "journalctl (Debian package systemd)")
	}
	p.Remote = findRemote()
	if p.Remote == "" {
		missing = append(missing, "systemd-journal-remote (Debian package systemd-journal-remote)")
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("journal tests need %v", missing)
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg + "; CI must install them (.ci/run does)")
		}
		tb.Skip("SKIP: " + msg + "; install them to run this test")
	}
	return p
}

func findRemote() string {
	if p, err := exec.LookPath("systemd-journal-remote"); err == nil {
		return p
	}
	for _, p := range []string{"/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Write appends entries to the journal file at path (created when
// missing; its name must end in .journal) with systemd-journal-remote.
func (p Paths) Write(tb testing.TB, path string, entries ...Entry) {
	tb.Helper()
	p.WriteExport(tb, path, AppendExport(nil, entries...))
}

// WriteExport is Write for entries already in the export format.
func (p Paths) WriteExport(tb testing.TB, path string, export []byte) {
	tb.Helper()
	cmd := exec.Command(p.Remote, "--output="+path, "--compress=no", "-")
	cmd.Stdin = bytes.NewReader(export)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("systemd-journal-remote --output=%s: %v\n%s", path, err, out)
	}
}
