package file

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
)

// truncate restarts t at offset 0 after its content shrank or changed
// under the same identity. Lines assembled before are delivered first.
//
// The content it held may live on in a copy (copytruncate): copies seen
// before continue now from where t was delivered; otherwise the old
// content is kept as t's prior for a copy found by the next scan.
func (in *Input) truncate(t *tracked, cur []byte) {
	in.flushGroups(t, true)
	in.logFile(slog.LevelInfo, "file truncated; reading it again from the start", t, 0, "previous_offset", t.offset)
	old := &prior{sum: t.fp.Sum(), offset: t.offset, line: t.line}
	handed := in.resolveCopies(t)
	t.resetTo0()
	in.setFP(t, cur)
	t.headChecked = len(cur)
	n, be := in.fmt.codec.bom(cur)
	if be != t.bigEndian && t.split != nil {
		t.split.Configure(in.cfg.MaxLineBytes, in.fmt.codec.width(), be)
	}
	t.bomLen, t.bigEndian = n, be
	t.refreshState()
	if handed {
		in.dropPrior(t, false)
	} else {
		in.setPrior(t, old)
	}
	in.local.truncations++
	in.emitPosition(t)
	// Its new content may be a copy's: of what another file held (its
	// inode was freed and reused by logrotate's copy), or of what a copy
	// read first holds (truncated and refilled unnoticed, then copied).
	tf, done, ok := in.fileOf(t)
	if !ok {
		return
	}
	fi, err := tf.Stat()
	if err != nil {
		done()
		return
	}
	cm := in.copySource(t.id, t.path, tf, fi.Size(), cur)
	done()
	switch {
	case t.life.dead():
	case cm.prior != nil:
		in.closeFile(t)
		in.continueCopy(t, cm.prior.offset, cm.prior.line, cm.from)
		in.consume(cm)
	case cm.waitOn != nil:
		in.copyOrOriginal(t, cm, fi.Size())
	}
}

// retire delivers what t still holds, closes it and forgets its position.
// why, when not empty, is logged as the reason, with the final offset
// and extra.
func (in *Input) retire(t *tracked, why string, extra ...any) {
	if t.life.dead() {
		return
	}
	in.flushGroups(t, true)
	in.closeFile(t)
	if why != "" {
		in.logFile(slog.LevelInfo, "file forgotten: "+why, t, t.offset, extra...)
	}
	in.resolveCopies(t)
	if t.copyOf != nil {
		t.copyOf.copies--
		t.copyOf = nil
	}
	in.releasePrior(t)
	in.unindexFP(t)
	t.life.retire()
	delete(in.files, t.key)
	if in.byID[t.id] == t {
		delete(in.byID, t.id)
	}
	delete(in.errSeen, t.path)
	in.unindexPath(t)
	in.emitForget(t.key)
}

// compactRing drops retired files from the read order, keeping the
// round-robin cursor on the same live file.
func (in *Input) compactRing() {
	n := 0
	cur := in.cursor
	for i, t := range in.ring {
		if t.life.dead() {
			if i < in.cursor {
				cur--
			}
			continue
		}
		in.ring[n] = t
		n++
	}
	clear(in.ring[n:])
	in.ring = in.ring[:n]
	if cur < 0 || cur >= n {
		cur = 0
	}
	in.cursor = cur
}

// watchDirs lists directories whose changes should wake discovery: each
// pattern's base and each tracked file's directory.
func (in *Input) watchDirs() []string {
	set := make(map[string]struct{})
	for _, p := range in.pats {
		d := p.Base()
		if p.Literal() {
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				d = filepath.Dir(d)
			}
		}
		set[d] = struct{}{}
	}
	for _, t := range in.ring {
		set[filepath.Dir(t.path)] = struct{}{}
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// emitReady emits t's completed multiline groups while the budget lasts
// (all of them when force is set) and returns how many it emitted.
func (in *Input) emitReady(t *tracked, force bool) int {
	if t.asm == nil {
		return 0
	}
	n := 0
	for g := t.asm.Ready(); g != nil; g = t.asm.Ready() {
		if !force && in.budget == 0 {
			break
		}
		in.emitGroup(t, g)
		t.asm.Done()
		n++
	}
	return n
}

// flushGroups releases t's buffered lines as a group and emits everything
// ready.
func (in *Input) flushGroups(t *tracked, force bool) {
	if t.asm == nil {
		return
	}
	t.asm.Flush()
	in.emitReady(t, force)
}
