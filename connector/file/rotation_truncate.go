package file

import (
	"log/slog"
)

// truncate restarts t at offset 0 after its content shrank or changed
// under the same identity. Lines assembled before are delivered first.
//
// The content it held may live on in a copy (copytruncate): copies seen
// before continue now from where t was delivered; otherwise the old
// content is kept as t's prior for a copy found by the next scan.
func (set *fileSet) truncate(t *tracked, cur []byte) {
	set.em.flushGroups(t, true)
	set.rep.logFile(slog.LevelInfo, "file truncated; reading it again from the start", t, 0, "previous_offset", t.offset)
	old := t.delivered()
	handed := set.resolveCopies(t)
	t.resetTo0()
	setFP(set.files, t, cur)
	t.headChecked = len(cur)
	t.setBOM(set.fmt.codec, cur, set.cfg.MaxLineBytes)
	t.refreshState()
	if handed {
		set.em.dropPrior(t, false)
	} else {
		set.em.setPrior(t, old, set.mg.scanGen, set.mg.lastScan)
	}
	set.em.local.truncations++
	set.em.emitPosition(t)
	// Its new content may be a copy's: of what another file held (its
	// inode was freed and reused by logrotate's copy), or of what a copy
	// read first holds (truncated and refilled unnoticed, then copied).
	tf, done, ok := fileOf(set.openFile, t)
	if !ok {
		return
	}
	fi, err := tf.Stat()
	if err != nil {
		done()
		return
	}
	cm := set.copySource(t.id, t.path, tf, fi.Size(), cur)
	done()
	switch {
	case t.life.dead():
	case cm.prior != nil:
		set.closeFile(t)
		set.continueCopy(t, cm.prior.Offset, cm.prior.Line, cm.from)
		set.consume(cm)
	case cm.waitOn != nil:
		set.copyOrOriginal(t, cm, fi.Size())
	}
}
