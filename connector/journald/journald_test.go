//go:build linux

package journald

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/journald/journaltest"
)

// Following: entries appended to a journal file, and a journal file
// created in the directory later, arrive while journalctl follows, in
// journal order, with _ts from __REALTIME_TIMESTAMP and the journal fields.
func TestFollowSeesAppendedEntriesAndNewFiles(t *testing.T) {
	r := newRig(t)
	r.write("a.journal", entries("m", 0, 5, "a.service")...)
	r.open(r.config())
	got := r.collect(5, 20*time.Second)
	equal(t, "first entries", payloads(got), msgs("m", 0, 5))
	o := got[2]
	if o["_ts"] != float64(journaltest.Base.UnixMilli()+2) || o["_SYSTEMD_UNIT"] != "a.service" || o["PRIORITY"] != "6" || o["_index"] != float64(0) {
		t.Fatalf("event fields: %v", o)
	}
	for k := range o {
		if strings.HasPrefix(k, "__") || k == "MESSAGE" {
			t.Fatalf("event carries %s by default: %v", k, o)
		}
	}
	r.write("a.journal", entries("m", 5, 8, "a.service")...)
	equal(t, "appended to the same file", payloads(r.collect(3, 20*time.Second)), msgs("m", 5, 8))
	r.write("b.journal", entries("m", 8, 10, "b.service")...)
	equal(t, "in a file created later", payloads(r.collect(2, 20*time.Second)), msgs("m", 8, 10))
	st := r.in.Stats()
	if st.LinesRead != 10 || st.Events != 10 || st.BytesRead <= 0 || st.Restarts != 0 {
		t.Fatalf("stats %+v", st)
	}
	var pos state
	if err := json.Unmarshal(r.pos, &pos); err != nil || pos.Cursor == "" || pos.Cursor != r.in.Cursor() ||
		pos.Realtime != journaltest.Base.UnixMicro()+9000 {
		t.Fatalf("position %s (%v), Cursor() %q", r.pos, err, r.in.Cursor())
	}
}

// A restart resumes right after the saved cursor: what was delivered is
// not read again, what came while stopped is read.
func TestRestartResumesAfterCursor(t *testing.T) {
	r := newRig(t)
	r.write("a.journal", entries("m", 0, 6, "a.service")...)
	in := r.open(r.config())
	equal(t, "first run", payloads(r.collect(6, 20*time.Second)), msgs("m", 0, 6))
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	// More than journalctl's default 10 lines of backlog.
	r.write("a.journal", entries("m", 6, 60, "a.service")...)
	r.open(r.config())
	equal(t, "after the restart", payloads(r.collect(54, 20*time.Second)), msgs("m", 6, 60))
	r.quiet(500 * time.Millisecond)
	// A restart with nothing new reads nothing.
	_ = r.in.Close()
	r.open(r.config())
	r.quiet(500 * time.Millisecond)
	if strings.Contains(r.log.String(), "rotated away") {
		t.Fatalf("a cursor still in the journal reported as lost:\n%s", r.log)
	}
}

// The saved cursor's file is gone (rotated and vacuumed) together with
// entries never read: the input warns with the time range lost and
// resumes at the oldest entry left.
func TestRotatedAwayCursorWarnsAndResumesAtOldest(t *testing.T) {
	r := newRig(t)
	r.write("old.journal", entries("m", 0, 5, "a.service")...)
	in := r.open(r.config())
	r.collect(5, 20*time.Second)
	_ = in.Close()
	r.write("old.journal", entries("m", 5, 8, "a.service")...) // never read
	r.write("new.journal", entries("m", 8, 11, "a.service")...)
	if err := os.Remove(filepath.Join(r.dir, "old.journal")); err != nil {
		t.Fatal(err)
	}
	r.open(r.config())
	equal(t, "after the rotation", payloads(r.collect(3, 20*time.Second)), msgs("m", 8, 11))
	logs := r.log.String()
	from := journaltest.Base.Add(4 * time.Millisecond).Format(time.RFC3339Nano)
	to := journaltest.Base.Add(8 * time.Millisecond).Format(time.RFC3339Nano)
	if !strings.Contains(logs, `"level":"WARN","msg":"journal entries after the saved cursor were rotated away`) ||
		!strings.Contains(logs, `"lost_from":"`+from+`"`) || !strings.Contains(logs, `"lost_to":"`+to+`"`) ||
		!strings.Contains(logs, `"lost_span":"4ms"`) {
		t.Fatalf("no WARN with the range lost (%s .. %s):\n%s", from, to, logs)
	}
}

// A cursor journalctl refuses (not a cursor at all) restarts from the
// oldest entry, with a WARN.
func TestInvalidCursorReadsFromOldest(t *testing.T) {
	r := newRig(t)
	r.write("a.journal", entries("m", 0, 3, "a.service")...)
	r.pos = []byte(`{"cursor":"not-a-cursor","realtime_us":1}`)
	r.open(r.config())
	equal(t, "from the oldest", payloads(r.collect(3, 20*time.Second)), msgs("m", 0, 3))
	if !strings.Contains(r.log.String(), "the saved journal cursor is not valid") {
		t.Fatalf("no WARN:\n%s", r.log)
	}
}

// A MESSAGE that is not UTF-8 is written as the file input writes such a
// line (U+FFFD, counted) and kept exactly in payload_base64; binary fields
// (NUL, newline, invalid UTF-8) likewise; a multi-line UTF-8 MESSAGE is
// exact in payload.
func TestNonUTF8MessageAndBinaryFields(t *testing.T) {
	r := newRig(t)
	bad := []byte("caf\xe9 \xff\xfe end")
	bin := []byte("\x00\x01\nbin\xff")
	e0 := journaltest.NewEntry(0, "a.service", "")
	e0[3].Value = bad
	e0 = append(e0, journaltest.Field{Name: "BIN", Value: bin})
	e1 := journaltest.NewEntry(1, "a.service", "line one\nline two\x00three", "TEXT", "ok ü")
	r.write("a.journal", e0, e1)
	r.open(r.config())
	got := r.collect(2, 20*time.Second)
	o := got[0]
	if o["payload"] != "caf\uFFFD \uFFFD\uFFFD end" {
		t.Fatalf("payload %q", o["payload"])
	}
	if b, _ := base64.StdEncoding.DecodeString(o["payload_base64"].(string)); string(b) != string(bad) {
		t.Fatalf("payload_base64 %q decodes to %q", o["payload_base64"], b)
	}
	if b, _ := base64.StdEncoding.DecodeString(o["BIN_base64"].(string)); string(b) != string(bin) {
		t.Fatalf("BIN_base64 %v", o)
	}
	if o["BIN"] != "\x00\x01\nbin\uFFFD" {
		t.Fatalf("BIN %q", o["BIN"])
	}
	p := got[1]
	if p["payload"] != "line one\nline two\x00three" || p["TEXT"] != "ok ü" {
		t.Fatalf("second entry %v", p)
	}
	if _, ok := p["payload_base64"]; ok {
		t.Fatalf("UTF-8 payload got a base64 copy: %v", p)
	}
	if st := r.in.Stats(); st.InvalidSequences != 4 {
		t.Fatalf("invalid sequences %d, want 4 (3 in MESSAGE, 1 in BIN)", st.InvalidSequences)
	}
}

// units, priority and matches select entries; include-fields and
// exclude-fields choose the fields.
func TestFiltersAndFieldSelection(t *testing.T) {
	r := newRig(t)
	var es []journaltest.Entry
	for i := range 12 {
		unit := []string{"a.service", "b.service", "c.service"}[i%3]
		e := journaltest.NewEntry(i, unit, unit+" "+string(rune('0'+i%10)), "APP", "x", "CODE_LINE", "7")
		if i%2 == 1 {
			e[4].Value = []byte("7") // PRIORITY debug
		}
		es = append(es, e)
	}
	r.write("a.journal", es...)
	c := r.config()
	c.Units = []string{"a.service", "b.service"}
	c.Priority = "info"
	c.IncludeFields = []string{"_SYSTEMD_UNIT", "APP", "CODE_LINE", "__CURSOR"}
	c.ExcludeFields = []string{"CODE_LINE"}
	r.open(c)
	// i%3 in {0,1} and i even: 0, 4, 6, 10.
	got := r.collect(4, 20*time.Second)
	equal(t, "selected", payloads(got), []string{"a.service 0", "b.service 4", "a.service 6", "b.service 0"})
	for _, o := range got {
		if len(o) != 6 || o["APP"] != "x" || o["__CURSOR"] == nil || o["_SYSTEMD_UNIT"] == nil {
			t.Fatalf("fields %v, want _index, _ts, payload, _SYSTEMD_UNIT, APP, __CURSOR", o)
		}
	}
	r.quiet(300 * time.Millisecond)

	// matches: FIELD=value terms as journalctl takes them.
	r2 := newRig(t)
	r2.write("a.journal", es...)
	c2 := r2.config()
	c2.Matches = []string{"_SYSTEMD_UNIT=c.service"}
	r2.open(c2)
	equal(t, "matches", payloads(r2.collect(4, 20*time.Second)), []string{"c.service 2", "c.service 5", "c.service 8", "c.service 1"})
}

// multiline groups consecutive entries and include/exclude-lines drop
// events as for files; a filtered event still moves the position.
func TestMultilineAndLineFilters(t *testing.T) {
	r := newRig(t)
	var es []journaltest.Entry
	n := 0
	add := func(m string) { es = append(es, journaltest.NewEntry(n, "a.service", m)); n++ }
	for i := range 3 {
		add("E" + string(rune('0'+i)) + " start")
		add("  at 1")
		add("  at 2")
		add("DEBUG x")
	}
	r.write("a.journal", es...)
	c := r.config()
	c.Multiline.Pattern = `^\s`
	c.Multiline.Negate = true
	c.Multiline.FlushIdleTimeout = 100 * time.Millisecond
	c.ExcludeLines = []string{`^DEBUG`}
	r.open(c)
	got := r.collect(3, 20*time.Second)
	equal(t, "groups", payloads(got), []string{"E0 start", "  at 1", "  at 2", "E1 start", "  at 1", "  at 2", "E2 start", "  at 1", "  at 2"})
	if got[1]["_index"] != float64(1) || got[2]["_index"] != float64(2) {
		t.Fatalf("group indexes: %v", got[:3])
	}
	// The last DEBUG entry is flushed by the idle timeout and filtered:
	// the position still reaches it.
	deadline := time.Now().Add(10 * time.Second)
	var pos state
	for time.Now().Before(deadline) {
		r.quiet(50 * time.Millisecond)
		_ = json.Unmarshal(r.pos, &pos)
		if pos.Realtime == journaltest.Base.UnixMicro()+11000 {
			break
		}
	}
	if pos.Realtime != journaltest.Base.UnixMicro()+11000 {
		t.Fatalf("position %s, want the last (filtered) entry's", r.pos)
	}
	if st := r.in.Stats(); st.Filtered != 3 || st.Events != 3 || st.LinesRead != 12 {
		t.Fatalf("stats %+v", st)
	}
}

// Killed journalctl is started again (shared backoff) and resumes after the
// last entry read: nothing lost, nothing twice.
func TestJournalctlRestartedAfterExit(t *testing.T) {
	r := newRig(t)
	r.write("a.journal", entries("m", 0, 3, "a.service")...)
	r.open(r.config())
	r.collect(3, 20*time.Second)
	pid := r.pid(0)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.write("a.journal", entries("m", 3, 40, "a.service")...)
	equal(t, "after the restart", payloads(r.collect(37, 20*time.Second)), msgs("m", 3, 40))
	if st := r.in.Stats(); st.Restarts < 1 {
		t.Fatalf("restarts %d", st.Restarts)
	}
	if r.pid(pid) == pid {
		t.Fatal("same journalctl")
	}
	r.quiet(300 * time.Millisecond)
}

// A journalctl that hangs (stopped: alive, prints nothing) while the
// journal has newer entries is killed and started again.
func TestHungJournalctlRestarted(t *testing.T) {
	r := newRig(t)
	r.write("a.journal", entries("m", 0, 2, "a.service")...)
	c := r.config()
	c.HangTimeout = 300 * time.Millisecond
	r.open(c)
	r.collect(2, 20*time.Second)
	// Idle but alive, with nothing newer in the journal: not a hang.
	r.quiet(4 * c.HangTimeout)
	if st := r.in.Stats(); st.Restarts != 0 {
		t.Fatalf("an idle journalctl was restarted %d times", st.Restarts)
	}
	pid := r.pid(0)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	r.write("a.journal", entries("m", 2, 4, "a.service")...)
	equal(t, "after the hang", payloads(r.collect(2, 20*time.Second)), msgs("m", 2, 4))
	if !strings.Contains(r.log.String(), "journalctl printed nothing although the journal holds newer entries") {
		t.Fatalf("no hang WARN:\n%s", r.log)
	}
	if st := r.in.Stats(); st.Restarts != 1 {
		t.Fatalf("restarts %d, want 1", st.Restarts)
	}
}

// journalctl failing at once (a directory that does not exist) has its
// stderr logged and is retried with the backoff, not in a spin.
func TestJournalctlStderrLoggedAndBackedOff(t *testing.T) {
	r := newRig(t)
	c := r.config()
	c.Directory = filepath.Join(r.dir, "missing")
	c.RestartBackoff, c.RestartBackoffMax = 50*time.Millisecond, 200*time.Millisecond
	r.open(c)
	start := time.Now()
	deadline := time.After(20 * time.Second)
	for r.in.Stats().Restarts < 4 {
		select {
		case <-deadline:
			t.Fatalf("restarts %d; log:\n%s", r.in.Stats().Restarts, r.log)
		case <-time.After(20 * time.Millisecond):
		}
	}
	// Waits of at least 25, 50, 100 ms (jitter halves at most).
	if el := time.Since(start); el < 175*time.Millisecond {
		t.Fatalf("4 restarts in %v: no backoff", el)
	}
	if !strings.Contains(r.log.String(), `"msg":"journalctl: Failed to open`) {
		t.Fatalf("stderr not logged:\n%s", r.log)
	}
}

// pid waits for a journalctl --follow other than old and returns its PID.
func (r *rig) pid(old int) int {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		r.in.fol.mu.Lock()
		p := r.in.fol.proc
		r.in.fol.mu.Unlock()
		if p != nil && p.Process != nil && p.Process.Pid != old {
			return p.Process.Pid
		}
		select {
		case <-deadline:
			return old
		case <-tick.C:
		}
	}
}

// The default (no read-from-beginning) reads entries from the time the
// input first opened on: older ones are skipped, and a restart before any
// entry arrived still reads what came while the agent was stopped.
func TestTailFromNowAndAnchorAcrossRestart(t *testing.T) {
	r := newRig(t)
	now := func(n int, msg string) journaltest.Entry {
		e := journaltest.NewEntry(n, "a.service", msg)
		e[0].Value = []byte(strconv.FormatInt(time.Now().UnixMicro(), 10))
		return e
	}
	r.write("a.journal", entries("old", 0, 3, "a.service")...)
	c := r.config()
	c.ReadFromBeginning = false
	in := r.open(c)
	r.quiet(200 * time.Millisecond)
	if r.pos == nil {
		t.Fatal("no anchor position saved before the first entry")
	}
	_ = in.Close()
	r.write("a.journal", now(10, "while stopped"))
	in = r.open(c)
	equal(t, "after a restart before any entry", payloads(r.collect(1, 20*time.Second)), []string{"while stopped"})
	r.write("a.journal", now(11, "live"))
	equal(t, "live", payloads(r.collect(1, 20*time.Second)), []string{"live"})
	// Idle polls after that keep the cursor's position (the start time
	// no longer matters).
	saved := string(r.pos)
	r.quiet(200 * time.Millisecond)
	if string(r.pos) != saved || !strings.Contains(saved, `"cursor":"s=`) {
		t.Fatalf("position %s after idle polls, want %s", r.pos, saved)
	}
	_ = in.Close()
}

// While Poll is not called the reader fills the bounded queue and stops
// reading (journalctl blocks on its pipe); then every entry still
// arrives, in order: nothing is dropped.
func TestFullQueueStopsReadingDropsNothing(t *testing.T) {
	r := newRig(t)
	r.write("a.journal", entries("m", 0, 500, "a.service")...)
	in, err := New(r.config(), inputSettings(r))
	if err != nil {
		t.Fatal(err)
	}
	in.q = newQueue(16, 1<<20)
	in.fol.q = in.q
	if err := in.Open(t.Context(), openFirst()); err != nil {
		t.Fatal(err)
	}
	r.in = in
	t.Cleanup(func() { _ = in.Close() })
	deadline := time.After(20 * time.Second)
	for !in.fol.blocked.Load() {
		select {
		case <-deadline:
			t.Fatal("the reader never waited for room")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if n := in.c.entries.Load(); n > 17 {
		t.Fatalf("%d entries read with a queue of 16", n)
	}
	equal(t, "everything after the pause", payloads(r.collect(500, 20*time.Second)), msgs("m", 0, 500))
}

// Close kills journalctl by its PID and reaps it, promptly.
func TestCloseStopsJournalctl(t *testing.T) {
	r := newRig(t)
	r.write("a.journal", entries("m", 0, 1, "a.service")...)
	in := r.open(r.config())
	r.collect(1, 20*time.Second)
	pid := r.pid(0)
	start := time.Now()
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Close took %v", el)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("journalctl %d still exists after Close", pid)
	}
	if err := in.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// user-units selects a user unit's entries (journalctl --user-unit: the
// unit's _SYSTEMD_USER_UNIT entries of the agent's own user).
func TestUserUnitFilter(t *testing.T) {
	r := newRig(t)
	uid := strconv.Itoa(os.Getuid())
	r.write("a.journal",
		journaltest.NewEntry(0, "", "user entry", "_SYSTEMD_USER_UNIT", "u.service", "_UID", uid),
		journaltest.NewEntry(1, "a.service", "system entry"),
		journaltest.NewEntry(2, "", "other user unit", "_SYSTEMD_USER_UNIT", "v.service", "_UID", uid))
	c := r.config()
	c.UserUnits = []string{"u.service"}
	r.open(c)
	equal(t, "user unit", payloads(r.collect(1, 20*time.Second)), []string{"user entry"})
	r.quiet(300 * time.Millisecond)
}

// The saved cursor's entry is gone and nothing came after it yet: the
// input warns, then reads what is written next.
func TestCursorGoneNothingAfter(t *testing.T) {
	r := newRig(t)
	r.write("old.journal", entries("m", 0, 3, "a.service")...)
	in := r.open(r.config())
	r.collect(3, 20*time.Second)
	_ = in.Close()
	if err := os.Remove(filepath.Join(r.dir, "old.journal")); err != nil {
		t.Fatal(err)
	}
	r.open(r.config())
	r.quiet(300 * time.Millisecond)
	r.write("new.journal", entries("m", 3, 6, "a.service")...)
	equal(t, "after", payloads(r.collect(3, 20*time.Second)), msgs("m", 3, 6))
	if !strings.Contains(r.log.String(), "nor any after it") {
		t.Fatalf("no WARN:\n%s", r.log)
	}
}

// journalctl-path runs another binary; what it writes to stderr is logged
// line by line, each cut to stderrLineBytes and at most stderrLines per
// process.
func TestStderrBounded(t *testing.T) {
	r := newRig(t)
	script := filepath.Join(r.dir, "fake-journalctl")
	body := "#!/bin/sh\n" +
		"head -c 5000 /dev/zero | tr '\\0' x >&2; echo >&2\n" +
		"i=0; while [ $i -lt 150 ]; do echo \"line $i\" >&2; i=$((i+1)); done\n" +
		"exit 3\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	c := r.config()
	c.JournalctlPath = script
	c.RestartBackoff, c.RestartBackoffMax = time.Hour, time.Hour
	r.open(c)
	deadline := time.After(20 * time.Second)
	for r.in.Stats().Restarts < 1 {
		select {
		case <-deadline:
			t.Fatalf("no restart; log:\n%s", r.log)
		case <-time.After(10 * time.Millisecond):
		}
	}
	logs := r.log.String()
	if n := strings.Count(logs, `"msg":"journalctl: `); n != stderrLines+1 {
		t.Fatalf("%d stderr records, want %d and the note", n, stderrLines+1)
	}
	if !strings.Contains(logs, `"msg":"journalctl: `+strings.Repeat("x", stderrLineBytes-1)) ||
		strings.Contains(logs, strings.Repeat("x", stderrLineBytes+1)) || !strings.Contains(logs, `"cut":true`) {
		t.Fatalf("the long line was not cut to the bound:\n%.3000s", logs)
	}
	if !strings.Contains(logs, "line 98") || strings.Contains(logs, "line 99\"") || !strings.Contains(logs, "further stderr lines are not logged") {
		t.Fatalf("stderr not bounded to %d lines:\n%s", stderrLines, logs)
	}
	if !strings.Contains(logs, "exit status 3") {
		t.Fatalf("exit status not logged:\n%s", logs)
	}
}
