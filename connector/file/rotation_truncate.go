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
func (in *Input) truncate(t *tracked, cur []byte) {
	in.em.flushGroups(t, true)
	in.rep.logFile(slog.LevelInfo, "file truncated; reading it again from the start", t, 0, "previous_offset", t.offset)
	old := t.delivered()
	handed := in.resolveCopies(t)
	t.resetTo0()
	setFP(in.files, t, cur)
	t.headChecked = len(cur)
	t.setBOM(in.fmt.codec, cur, in.cfg.MaxLineBytes)
	t.refreshState()
	if handed {
		in.em.dropPrior(t, false)
	} else {
		in.em.setPrior(t, old, in.mg.scanGen, in.mg.lastScan)
	}
	in.em.local.truncations++
	in.em.emitPosition(t)
	// Its new content may be a copy's: of what another file held (its
	// inode was freed and reused by logrotate's copy), or of what a copy
	// read first holds (truncated and refilled unnoticed, then copied).
	tf, done, ok := fileOf(in.openFile, t)
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
		in.continueCopy(t, cm.prior.Offset, cm.prior.Line, cm.from)
		in.consume(cm)
	case cm.waitOn != nil:
		in.copyOrOriginal(t, cm, fi.Size())
	}
}
