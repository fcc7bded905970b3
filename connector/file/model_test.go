package file

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// The model-based test drives the real input against real files with a
// seeded random sequence of writer and operator actions, and checks every
// delivered line against a model of what each file (generation of
// content) holds: each complete line exactly once, in order, with the
// right offset and line number; every line that stayed reachable is
// delivered by the end.
//
// Run one seed (with an op trace on failure): MODEL_SEED=1234 go test
// -run TestModel ./file/; MODEL_LIVE=1 also prints the ops as they run,
// the input's debug log and every position it stores. Soak:
// MODEL_SEEDS=5000, from seed 1 or, with MODEL_SEED too, from that seed.

type mline struct {
	n   int
	end int64
}

// mgen is one generation of content: a file from its creation (or
// truncation) until it is deleted or truncated.
type mgen struct {
	tag       string
	path      string // current name, "" once unlinked
	ino       uint64
	lines     []mline
	size      int64
	partial   int // bytes of an unterminated last line
	delivered int
	lineBase  int  // lines skipped by a first-start tail
	dead      bool // content unreachable: no more deliveries allowed
	required  int  // lines that must be delivered by the end (-1: all)
	copied    int  // lines held by its copy (copytruncateInGlob), while it has a name
	// outside: renamed to a name the glob does not match (renameOut);
	// relaxed: while the input ran, so it may lose the rest (a closed file).
	outside, relaxed bool
}

type model struct {
	t       *testing.T
	r       *rand.Rand
	h       *harness
	gens    map[string]*mgen // by tag
	at      map[string]*mgen // by current name
	running bool
	seq     int
	trace   []string
	rfb     bool
	stops   int
	snap    *snapshot // state as stored before the latest poll
}

// snapshot is what a scheduler had stored before a poll whose events it
// then lost in a crash.
type snapshot struct {
	saved     map[string][]byte
	delivered map[*mgen]int
}

func (m *model) logf(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf(format, args...))
	if os.Getenv("MODEL_LIVE") != "" {
		println("TRACE", fmt.Sprintf(format, args...))
	}
	if len(m.trace) > 400 {
		m.trace = m.trace[1:]
	}
}

const modelNames = "abc"

func TestModel(t *testing.T) {
	seeds := 200
	budget := 25 * time.Second
	if testing.Short() {
		seeds, budget = 30, 8*time.Second
	}
	first := uint64(1)
	if s := os.Getenv("MODEL_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		first, seeds = v, 1
	}
	if s := os.Getenv("MODEL_SEEDS"); s != "" { // soak: MODEL_SEEDS=5000
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		seeds, budget = v, time.Duration(v)*time.Second
	}
	start := time.Now()
	for seed := first; seed < first+uint64(seeds); seed++ {
		if time.Since(start) > budget {
			t.Logf("time budget reached after %d seeds", seed-first)
			break
		}
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			m := runModel(t, seed)
			if t.Failed() {
				if seeds == 1 {
					t.Logf("trace:\n%s", strings.Join(m.trace, "\n"))
				}
				t.Logf("reproduce with MODEL_SEED=%d", seed)
			}
		})
	}
}

func runModel(t *testing.T, seed uint64) (m *model) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	rfb := r.IntN(2) == 0
	h := newHarness(t, func(c *Config) {
		c.Paths = []string{c.Paths[0] + "*"} // *.log* also matches rotated x.log.1
		c.ReadFromBeginning = rfb
		c.FingerprintBytes = 16 + r.IntN(48)
		c.MaxLineBytes = 4096
		if r.IntN(3) == 0 {
			c.MaxOpenFiles = 1 + r.IntN(3)
		}
		if r.IntN(3) == 0 {
			c.CloseInactive = 25 * time.Millisecond // closes after ~3 idle polls
		}
	})
	if os.Getenv("MODEL_LIVE") != "" {
		h.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	m = &model{t: t, r: r, h: h, gens: map[string]*mgen{}, at: map[string]*mgen{}, rfb: rfb}
	if err := os.Mkdir(h.path("old"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Files present before the first start.
	for i := 0; i < r.IntN(3); i++ {
		name := m.name()
		m.writeLines(name, 1+r.IntN(4))
		if r.IntN(2) == 0 {
			m.writePartial(name)
		}
	}
	h.open()
	m.running = true
	if !rfb {
		for _, g := range m.at {
			g.delivered, g.lineBase = len(g.lines), len(g.lines)
		}
	}
	ops := 120 + r.IntN(120)
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(modelFailure); !ok {
				panic(r)
			}
		}
	}()
	for i := 0; i < ops && !t.Failed(); i++ {
		m.step()
	}
	if !m.running {
		m.start()
	}
	m.check(h.pollAll())
	// Files renamed out of the glob hold their descriptor until quiet for
	// close-inactive; with max-open-files 1 the others wait for it.
	h.clock = h.clock.Add(h.cfg.CloseInactive + time.Second)
	m.check(h.pollAll())
	for _, g := range m.gens {
		req := g.required
		if req < 0 {
			req = len(g.lines)
		}
		if g.outside && g.relaxed && !g.dead {
			req = g.delivered // a closed file renamed away while running is not read
		}
		if g.delivered < req {
			t.Errorf("gen %s (%s, ino %d, size %d): delivered %d of %d required lines (dead=%v)", g.tag, g.path, g.ino, g.size, g.delivered, req, g.dead)
			for _, tr := range h.in.ring {
				t.Logf("  tracked %s path=%s open=%v readPos=%d offset=%d needsRead=%v atEOF=%v missing=%d gone=%v failed=%v lastSize=%d",
					tr.key, tr.path, tr.f != nil, tr.readPos, tr.offset, tr.life.needsRead(), tr.life.atEOF(), tr.missing, tr.life.gone(), tr.life.failed(), tr.lastSize)
			}
		}
	}
	return m
}

func (m *model) name() string {
	return string(modelNames[m.r.IntN(len(modelNames))]) + ".log"
}

func (m *model) step() {
	r := m.r
	switch k := r.IntN(100); {
	case k < 30:
		m.writeLines(m.name(), 1+r.IntN(6))
	case k < 38:
		m.writePartial(m.name())
	case k < 46:
		m.rotate(m.name())
	case k < 49:
		m.copytruncate(m.name())
	case k < 53:
		m.copytruncateInGlob(m.name())
	case k < 55:
		m.renameOut(m.name())
	case k < 56:
		m.truncate(m.name())
	case k < 61:
		m.remove(m.name(), r.IntN(2) == 0)
	case k < 66:
		if m.running {
			m.stop()
		} else {
			m.start()
		}
	case k < 68:
		if m.running && m.snap != nil && (m.rfb || m.stops > 0) {
			m.crash()
		}
	case k < 72:
		if m.running {
			for i := 0; i < 1+r.IntN(5); i++ {
				m.poll(1 + r.IntN(8))
			}
		}
	default:
		if m.running {
			m.poll(1 + r.IntN(40))
		}
	}
}

func (m *model) gen(name string) *mgen {
	g := m.at[name]
	if g == nil {
		m.seq++
		g = &mgen{tag: fmt.Sprintf("%c%07x", 'A'+m.r.IntN(26), m.r.Uint32()>>4), path: name, required: -1}
		m.gens[g.tag] = g
		m.at[name] = g
		f, err := os.OpenFile(m.h.path(name), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			m.t.Fatal(err)
		}
		g.ino = inoOf(m.t, f)
		f.Close()
	}
	return g
}

func inoOf(t *testing.T, f *os.File) uint64 {
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	id, _, ok := idOfOpen(f, fi)
	if !ok {
		t.Fatal("no identity for an open file")
	}
	return id.ino
}

func (m *model) appendRaw(name string, s string) {
	f, err := os.OpenFile(m.h.path(name), os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		m.t.Fatal(err)
	}
	if _, err := io.WriteString(f, s); err != nil {
		m.t.Fatal(err)
	}
	f.Close()
}

func (m *model) writeLines(name string, n int) {
	g := m.gen(name)
	m.logf("write %s gen %s ino %d lines %d..%d", name, g.tag, g.ino, len(g.lines)+1, len(g.lines)+n)
	var b strings.Builder
	for i := 0; i < n; i++ {
		num := len(g.lines) + 1
		text := fmt.Sprintf("%s n=%d %s", g.tag, num, strings.Repeat("x", m.r.IntN(60)))
		if g.partial > 0 {
			// The partial bytes written earlier are this line's prefix
			// (see writePartial); write the rest.
			text = text[g.partial:]
			g.size += int64(g.partial)
			g.partial = 0
		}
		if m.r.IntN(8) == 0 {
			text += "\r"
		}
		b.WriteString(text + "\n")
		g.size += int64(len(text) + 1)
		g.lines = append(g.lines, mline{n: num, end: g.size})
	}
	m.appendRaw(name, b.String())
}

// writePartial writes the start of the next line without its newline.
// The next writeLines completes it, so the text stays parseable.
func (m *model) writePartial(name string) {
	g := m.gen(name)
	next := fmt.Sprintf("%s n=%d ", g.tag, len(g.lines)+1)
	if g.partial >= len(next) {
		return
	}
	k := g.partial + 1 + m.r.IntN(len(next)-g.partial)
	m.logf("partial %s gen %s %q", name, g.tag, next[g.partial:k])
	m.appendRaw(name, next[g.partial:k])
	g.partial = k
}

// isOpen reports whether the running input holds a descriptor on ino:
// only then can it finish a file that lost its name.
func (m *model) isOpen(ino uint64) bool {
	if !m.running {
		return false
	}
	for _, t := range m.h.in.ring {
		if !t.life.dead() && t.f != nil && t.id.ino == ino {
			return true
		}
	}
	return false
}

// lose marks g unreachable from now on unless the input holds it open.
func (m *model) lose(g *mgen) {
	m.logf("  lose gen %s open=%v delivered=%d/%d", g.tag, m.isOpen(g.ino), g.delivered, len(g.lines))
	g.path = ""
	if m.isOpen(g.ino) {
		return // it will be read to its end
	}
	g.dead = true
	g.required = g.delivered
}

func (m *model) rotate(name string) {
	g := m.at[name]
	if g == nil {
		return
	}
	delete(m.at, name)
	target := name + ".1"
	if m.r.IntN(2) == 0 {
		target = "old/" + name // outside the globs
	}
	if old := m.at[target]; old != nil {
		delete(m.at, target)
		m.lose(old)
	}
	m.logf("rotate %s -> %s gen %s", name, target, g.tag)
	if err := os.Rename(m.h.path(name), m.h.path(target)); err != nil {
		m.t.Fatal(err)
	}
	if strings.HasPrefix(target, "old/") {
		m.lose(g)
		_ = os.Remove(m.h.path(target)) // keep the directory small; an open fd survives
		return
	}
	g.path = target
	m.at[target] = g
}

func (m *model) copytruncate(name string) {
	g := m.at[name]
	if g == nil {
		return
	}
	data, err := os.ReadFile(m.h.path(name))
	if err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(m.h.path("old/"+name), data, 0o644); err != nil {
		m.t.Fatal(err)
	}
	m.truncate(name)
}

// copytruncateInGlob is logrotate's copytruncate with the copies in the
// glob: name.1 shifts to name.2, name is copied to a new name.1 and
// truncated. The copy holds the generation's lines: they are delivered
// once, by the original or the copy. Sometimes the input polls between
// the copy and the truncate, and the application writes lines there that
// only the original gets (lost unless read before the truncate, as with
// logrotate itself).
func (m *model) copytruncateInGlob(name string) {
	g := m.at[name]
	if g == nil || g.size < int64(m.h.cfg.FingerprintBytes) {
		// A copy shorter than fingerprint-bytes is told from a new file
		// only while its original's fingerprint is no longer than it
		// (doc.go, Limits).
		return
	}
	if old := m.at[name+".1"]; old != nil {
		if older := m.at[name+".2"]; older != nil {
			delete(m.at, name+".2")
			m.lose(older)
		}
		m.logf("rename %s.1 -> %s.2 gen %s", name, name, old.tag)
		if err := os.Rename(m.h.path(name+".1"), m.h.path(name+".2")); err != nil {
			m.t.Fatal(err)
		}
		delete(m.at, name+".1")
		old.path = name + ".2"
		m.at[name+".2"] = old
	}
	data, err := os.ReadFile(m.h.path(name))
	if err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(m.h.path(name+".1"), data, 0o644); err != nil {
		m.t.Fatal(err)
	}
	copied := len(g.lines)
	m.logf("copy %s -> %s.1 gen %s lines %d", name, name, g.tag, copied)
	if m.running && m.r.IntN(3) == 0 {
		m.poll(1 + m.r.IntN(40))
	}
	if m.r.IntN(4) == 0 {
		m.writeLines(name, 1+m.r.IntN(3))
		if m.running && m.r.IntN(2) == 0 {
			m.poll(1 + m.r.IntN(40))
		}
	}
	m.logf("truncate %s gen %s delivered=%d/%d", name, g.tag, g.delivered, len(g.lines))
	if err := os.Truncate(m.h.path(name), 0); err != nil {
		m.t.Fatal(err)
	}
	// The generation lives on in the copy, up to the lines it holds (or
	// those already delivered from the original after the copy).
	g.dead, g.required, g.copied = true, max(copied, g.delivered), copied
	g.path = name + ".1"
	m.at[name+".1"] = g
	delete(m.at, name)
	ng := m.gen(name)
	ng.ino = g.ino
	g.ino = m.inoAt(name + ".1")
}

// renameOut renames name to a name in the same directory that the glob
// does not match. While the input runs, it reads an open file until quiet;
// while it is stopped, the next start finds the file by its identity and
// drains it from its saved position.
func (m *model) renameOut(name string) {
	g := m.at[name]
	if g == nil {
		return
	}
	target := strings.TrimSuffix(name, ".log") + ".old"
	if old := m.at[target]; old != nil {
		delete(m.at, target)
		m.lose(old)
	}
	m.logf("rename %s -> %s gen %s running=%v", name, target, g.tag, m.running)
	if err := os.Rename(m.h.path(name), m.h.path(target)); err != nil {
		m.t.Fatal(err)
	}
	delete(m.at, name)
	if !m.running && !m.savedFor(g, target) {
		m.lose(g) // never tracked: nothing says where it went
		return
	}
	g.path, g.outside, g.relaxed = target, true, g.relaxed || m.running
	m.at[target] = g
}

// settleOutside decides, when the input stops, which files renamed out of
// the glob the next start can find: those with a saved position. The
// others are lost with their unread lines.
func (m *model) settleOutside() {
	for _, g := range m.gens {
		if g.outside && !g.dead && g.path != "" && !m.savedFor(g, g.path) {
			g.dead, g.required = true, g.delivered
		}
	}
}

// savedFor reports whether a position saved for g's file (now at name)
// still describes its content, so the next start can find and drain it.
func (m *model) savedFor(g *mgen, name string) bool {
	head, err := os.ReadFile(m.h.path(name))
	if err != nil {
		return false
	}
	for _, raw := range m.h.saved {
		var s savedState
		if json.Unmarshal(raw, &s) != nil || s.Ino != g.ino || s.Offset > int64(len(head)) {
			continue
		}
		if s.FPLen <= len(head) && fmt.Sprintf("%016x", fingerprint.Of(head[:s.FPLen]).Hash) == s.FP {
			return true
		}
	}
	return false
}

func (m *model) inoAt(name string) uint64 {
	f, err := os.Open(m.h.path(name))
	if err != nil {
		m.t.Fatal(err)
	}
	defer f.Close()
	return inoOf(m.t, f)
}

func (m *model) truncate(name string) {
	g := m.at[name]
	if g == nil {
		return
	}
	m.logf("truncate %s gen %s delivered=%d/%d", name, g.tag, g.delivered, len(g.lines))
	if err := os.Truncate(m.h.path(name), 0); err != nil {
		m.t.Fatal(err)
	}
	// The content is gone; the same inode starts a new generation.
	g.dead, g.required, g.path = true, g.delivered, ""
	delete(m.at, name)
	ng := m.gen(name)
	ng.ino = g.ino
}

func (m *model) remove(name string, recreate bool) {
	g := m.at[name]
	if g == nil {
		return
	}
	m.logf("remove %s gen %s recreate=%v", name, g.tag, recreate)
	if err := os.Remove(m.h.path(name)); err != nil {
		m.t.Fatal(err)
	}
	delete(m.at, name)
	m.lose(g)
	if recreate {
		m.writeLines(name, 1+m.r.IntN(3)) // likely reuses the inode
	}
}

// poll runs one poll, remembering what was stored before it.
func (m *model) poll(max int) {
	sn := &snapshot{saved: make(map[string][]byte, len(m.h.saved)), delivered: make(map[*mgen]int, len(m.gens))}
	for k, v := range m.h.saved {
		sn.saved[k] = v
	}
	for _, g := range m.gens {
		sn.delivered[g] = g.delivered
	}
	m.snap = sn
	m.check(m.h.poll(max))
}

// crash simulates a scheduler killed after the last poll but before it
// stored that poll's events: the input is closed without Drain and
// restarts from the positions stored before. The lost lines must come
// again, in order, from exactly there.
func (m *model) crash() {
	m.logf("crash (last poll lost)")
	_ = m.h.in.Close()
	m.h.saved = m.snap.saved
	for _, g := range m.gens {
		d := m.snap.delivered[g]
		g.delivered = d
		switch {
		case g.dead && g.path != "" && g.copied > 0:
			// Its copy still holds the lines the lost poll delivered.
			g.required = max(g.copied, d)
		case g.dead && g.required > d:
			g.required = d
		}
	}
	m.snap = nil
	m.running = false
	for _, g := range m.gens {
		if g.path == "" && (!g.dead || g.required > g.delivered) {
			g.dead, g.required = true, g.delivered
		}
	}
	m.settleOutside()
	m.start()
}

func (m *model) stop() {
	m.logf("stop")
	m.stops++
	m.snap = nil
	m.check(m.h.apply(m.h.in.Drain(nil)))
	if err := m.h.in.Close(); err != nil {
		m.t.Fatal(err)
	}
	m.running = false
	// Files kept alive only by the input's descriptors are lost now.
	for _, g := range m.gens {
		if g.path == "" && (!g.dead || g.required > g.delivered) {
			g.dead, g.required = true, g.delivered
		}
	}
	m.settleOutside()
}

func (m *model) start() {
	m.logf("start")
	if os.Getenv("MODEL_LIVE") != "" {
		for k, v := range m.h.saved {
			println("SAVED", k, string(v))
		}
	}
	m.h.open()
	m.running = true
}

func (m *model) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Errorf(format, args...)
	panic(modelFailure{})
}

type modelFailure struct{}

// check validates delivered lines against the model.
func (m *model) check(rs []rec) {
	t := m.t
	t.Helper()
	for _, r := range rs {
		text := r.text()
		tag, rest, ok := strings.Cut(text, " n=")
		g := m.gens[tag]
		if !ok || g == nil {
			m.fail("delivered a line no generation wrote: %q (%+v)", text, r)
		}
		numStr, _, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(numStr)
		if err != nil {
			m.fail("unparseable line %q", text)
		}
		switch {
		case g.dead && n > g.required:
			m.fail("gen %s: line %d delivered after its content was gone", tag, n)
		case n != g.delivered+1:
			m.fail("gen %s: delivered line %d, want %d (duplicate or gap)", tag, n, g.delivered+1)
		case n > len(g.lines):
			m.fail("gen %s: line %d delivered before it was complete", tag, n)
		}
		want := g.lines[n-1]
		if r.Offset != want.end || r.Line != int64(n-g.lineBase) {
			m.fail("gen %s line %d: _offset %d _line %d, want %d %d", tag, n, r.Offset, r.Line, want.end, n-g.lineBase)
		}
		if strings.HasSuffix(text, "\r") {
			m.fail("CR not stripped: %q", text)
		}
		m.logf("  got %s n=%d off=%d line=%d file=%s", tag, n, r.Offset, r.Line, r.File)
		g.delivered = n
	}
}
