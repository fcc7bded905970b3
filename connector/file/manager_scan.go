package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/file/internal/glob"
	"github.com/edge-agent/edge-agent/connector/input"
)

// errReplacedByDir reports a watched file whose name now holds a directory.
var errReplacedByDir = errors.New("file was replaced by a directory")

// manager is discovery and its schedule: the globs, when they are listed
// next, which files another input claims, and what a listing failure
// streak has logged already.
type manager struct {
	pats     []*glob.Pattern
	excludes []*glob.Pattern
	// claims says which input reads a file several match; unclaim
	// removes this input's matcher from it at Close.
	claims      *input.Claims
	unclaim     func()
	claimLogged map[string]struct{} // paths logged as read by another input

	scanGen   uint64
	firstScan bool
	lastScan  time.Time
	rescan    bool
	// knownPats are the patterns the saved positions were taken under
	// (patternsKey); nil when every pattern counts as known.
	knownPats map[string]struct{}

	watch *watcher
	wake  <-chan struct{} // the watcher's wake channel; kept after Close
}

func newManager() manager {
	return manager{
		claimLogged: make(map[string]struct{}),
	}
}

// candidate is a file seen for the first time by a scan. Only what
// discover needs is kept: a scan of a large tree holds one per new file.
type candidate struct {
	path string
	size int64
	mod  time.Time
	id   fileID
	// tail: found by the first scan under a pattern new since the last
	// run only (read-from-beginning false then starts it at its end).
	tail bool
}

// discoverCtxEvery is how many new files are opened between two looks at
// the context, so a stop is noticed quickly during a large first scan.
const discoverCtxEvery = 64

// scan expands the globs and reconciles what it finds with the tracked
// files: known identities get their new name and size, new ones are
// discovered (oldest first), and files no longer found are finished and
// forgotten. Polling is the source of truth; fsnotify only makes it run
// sooner.
//
// Not being listed is not proof of absence: files under a directory whose
// listing failed (permissions, EMFILE, I/O errors) keep their state as if
// they had been seen unchanged, so they are neither forgotten nor read
// again from 0 when the listing works again.
//
// scan returns ctx.Err() (wrapped) as soon as it sees ctx done; what it
// had done by then is consistent and nothing is forgotten.
func (set *fileSet) scan(ctx context.Context, now time.Time) error {
	set.mg.lastScan = now
	set.mg.rescan = false
	set.mg.scanGen++
	ls, err := set.list(ctx)
	if err != nil {
		return err
	}
	set.rep.listRecovered(ls.failed)
	if err := set.reconcileUnseen(ls.failed); err != nil {
		return err
	}
	if err := set.discoverFresh(ctx, ls.fresh, now); err != nil {
		return err
	}
	if set.mg.firstScan && set.files.HasSaved() {
		if err := set.findMovedWhileStopped(ctx, now, ls.failed); err != nil {
			return err
		}
	}
	set.em.expirePriors(set.mg.scanGen)
	set.dropUnmatchedSaved(ls.failed)
	set.ring, set.cursor = compactRing(set.ring, set.cursor)
	if set.mg.watch != nil {
		set.mg.watch.sync(set.mg.watchDirs(set.ring))
	}
	return nil
}

// listing is what one scan's walk of the globs found.
type listing struct {
	gen      uint64
	failed   map[string]struct{} // paths whose state is unknown in this scan
	firstErr error               // the first error on-error: fail returns
	visited  map[string]struct{} // with several patterns, the paths walked already
	fresh    []candidate         // files not tracked yet
	freshIDs map[fileID]struct{}
}

// list walks every pattern: known files are updated as it goes (seen),
// new ones collected.
func (set *fileSet) list(ctx context.Context) (*listing, error) {
	ls := &listing{gen: set.mg.scanGen, failed: make(map[string]struct{}), freshIDs: make(map[fileID]struct{})}
	// One pattern never yields a path twice; only several can overlap.
	if len(set.mg.pats) > 1 {
		ls.visited = make(map[string]struct{})
	}
	onErr := func(path string, err error) {
		if errors.Is(err, glob.ErrTooDeep) {
			set.rep.tooDeep(path)
			return
		}
		ls.failed[path] = struct{}{}
		if e := set.rep.listFailed(path, err); e != nil && ls.firstErr == nil {
			ls.firstErr = e
		}
	}
	for _, p := range set.mg.scanOrder() {
		tail := set.mg.firstScan && set.mg.isNewPattern(p)
		err := p.Walk(ctx, set.fsys, func(path string) { set.visit(ls, path, tail) }, onErr)
		if err != nil {
			set.mg.rescan = true
			return nil, fmt.Errorf("scan %s: %w", p, err)
		}
		if ls.firstErr != nil {
			return nil, ls.firstErr
		}
	}
	return ls, nil
}

// visit takes one path a pattern matched.
func (set *fileSet) visit(ls *listing, path string, tail bool) {
	if ls.visited != nil {
		if _, dup := ls.visited[path]; dup {
			return
		}
		ls.visited[path] = struct{}{}
	}
	if set.mg.excluded(path) || set.mg.readElsewhere(set.id, path, set.rep.log) {
		return
	}
	fi, err := set.fsys.Stat(path) // follows symlinks: identity of the target
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			ls.failed[path] = struct{}{}
			if e := set.rep.fileErr("scan", path, err); e != nil && ls.firstErr == nil {
				ls.firstErr = e
			}
		}
		return
	}
	if !fi.Mode().IsRegular() {
		return
	}
	id, _, ok := idOf(path, fi)
	if !ok {
		return
	}
	if t, ok := set.files.ID(id); ok {
		if t.seenScan == ls.gen { // a second name of the same file keeps the first
			return
		}
		if !set.reusedInode(t, path) {
			set.seen(t, path, fi, ls.gen)
			return
		}
		set.forgetReused(t, path)
	}
	if _, dup := ls.freshIDs[id]; !dup {
		ls.freshIDs[id] = struct{}{}
		ls.fresh = append(ls.fresh, candidate{path: path, size: fi.Size(), mod: fi.ModTime(), id: id, tail: tail})
	}
}

// reconcileUnseen handles the tracked files the walk did not list.
func (set *fileSet) reconcileUnseen(failed map[string]struct{}) error {
	for _, t := range set.ring {
		if t.life.dead() || t.seenScan == set.mg.scanGen || underAny(t.path, failed) {
			continue
		}
		if err := set.unseen(t); err != nil {
			return err
		}
	}
	return nil
}

// discoverFresh discovers the new files oldest first, as the Java agent
// orders them; but files with a saved position first, so that a copy
// (copytruncate) finds the content its original held before it was
// truncated while the agent was stopped, whatever their times.
func (set *fileSet) discoverFresh(ctx context.Context, fresh []candidate, now time.Time) error {
	slices.SortStableFunc(fresh, func(a, b candidate) int {
		sa := len(set.files.SavedOn(a.id)) > 0
		sb := len(set.files.SavedOn(b.id)) > 0
		switch {
		case sa && !sb:
			return -1
		case sb && !sa:
			return 1
		}
		return a.mod.Compare(b.mod)
	})
	for i, c := range fresh {
		if i%discoverCtxEvery == discoverCtxEvery-1 {
			if err := ctx.Err(); err != nil {
				set.mg.rescan = true // the rest is found by the next scan
				return fmt.Errorf("scan: %w", err)
			}
		}
		if err := set.discover(c, now); err != nil {
			return err
		}
	}
	return nil
}

// dropUnmatchedSaved drops the positions whose file was not found in two
// scans, so positions do not accumulate forever; a position whose file
// may sit under a directory that could not be listed is kept.
func (set *fileSet) dropUnmatchedSaved(failed map[string]struct{}) {
	for _, s := range set.files.EndScan(func(s saved) bool { return underAny(s.Path, failed) }) {
		set.dropSaved(s)
	}
}

// dropSaved forgets a saved position whose file was not found, and
// reports the bytes it had not read.
func (set *fileSet) dropSaved(s saved) {
	if lost := s.Size - s.Offset; lost > 0 {
		set.em.emitLoss(s.Key, s.Path, input.LossGone, s.Offset, s.Size)
		set.rep.log.Warn("file rotated or deleted while the agent was stopped and not found in its directory; its unread bytes are lost",
			"path", s.Path, "dev", s.ID.dev, "inode", s.ID.ino, "offset", s.Offset, "lost_bytes", lost)
	} else {
		set.rep.log.Info("file position forgotten: the file was not found since the start",
			"path", s.Path, "dev", s.ID.dev, "inode", s.ID.ino, "offset", s.Offset)
	}
	set.em.emitForget(s.Key)
}

// scanOrder is the order the patterns are walked in: in the first scan,
// those known from the last run first, so a file that an old and a new
// pattern both match counts as found under the old one (read from 0).
func (mg *manager) scanOrder() []*glob.Pattern {
	if !mg.firstScan || mg.knownPats == nil {
		return mg.pats
	}
	out := make([]*glob.Pattern, 0, len(mg.pats))
	for _, p := range mg.pats {
		if !mg.isNewPattern(p) {
			out = append(out, p)
		}
	}
	for _, p := range mg.pats {
		if mg.isNewPattern(p) {
			out = append(out, p)
		}
	}
	return out
}

// isNewPattern reports whether p was not configured in the last run.
func (mg *manager) isNewPattern(p *glob.Pattern) bool {
	if mg.knownPats == nil {
		return false
	}
	_, ok := mg.knownPats[p.String()]
	return !ok
}

// recordPatterns queues the record of the patterns the positions are now
// taken under, when it changed. Only read-from-beginning false needs it:
// otherwise every file without a position is read from 0 anyway.
func (set *fileSet) recordPatterns() {
	if set.cfg.ReadFromBeginning {
		return
	}
	pats := make([]string, 0, len(set.mg.pats))
	same := set.mg.knownPats != nil && len(set.mg.knownPats) == len(set.mg.pats)
	for _, p := range set.mg.pats {
		pats = append(pats, p.String())
		if _, ok := set.mg.knownPats[p.String()]; !ok {
			same = false
		}
	}
	if same {
		return
	}
	set.em.pending = append(set.em.pending, input.Event{Pos: input.Position{Key: patternsKey, State: encodePatterns(pats)}})
	set.mg.knownPats = nil
}

// underAny reports whether path is one of dirs or lies below one of them.
// It looks up each ancestor, so its cost is the path's depth, not the
// number of failed directories.
func underAny(path string, dirs map[string]struct{}) bool {
	if len(dirs) == 0 {
		return false
	}
	for p := path; ; {
		if _, ok := dirs[p]; ok {
			return true
		}
		up := filepath.Dir(p)
		if up == p {
			return false
		}
		p = up
	}
}

// listFailed applies on-error to a directory (or pattern base) that could
// not be listed. With skip it logs a WARN once per directory per failure
// streak: a directory failing on every scan must not flood the log.
func (rp *report) listFailed(dir string, err error) error {
	rp.local.errors++
	if rp.failFast {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	if _, ok := rp.listErrs[dir]; !ok {
		rp.listErrs[dir] = struct{}{}
		rp.log.Warn("cannot list directory; keeping the positions of its files until it can be listed again",
			"dir", dir, "error", err)
	}
	return nil
}

// listRecovered ends the failure streak of directories listed again.
func (rp *report) listRecovered(failedNow map[string]struct{}) {
	for dir := range rp.listErrs {
		if _, ok := failedNow[dir]; !ok {
			delete(rp.listErrs, dir)
			rp.log.Info("directory can be listed again", "dir", dir)
		}
	}
}

// tooDeep logs, once per directory, that the walk did not descend below
// it (glob.MaxDepth).
func (rp *report) tooDeep(dir string) {
	if _, ok := rp.deepSeen[dir]; ok {
		return
	}
	rp.deepSeen[dir] = struct{}{}
	rp.log.Warn("not walking below a directory nested too deep under the pattern base",
		"dir", dir, "max_depth", glob.MaxDepth)
}

func (mg *manager) excluded(path string) bool {
	for _, p := range mg.excludes {
		if p.Match(path) {
			return true
		}
	}
	return false
}

// seen updates a known file matched by this scan.
func (set *fileSet) seen(t *tracked, path string, fi os.FileInfo, gen uint64) {
	t.seenScan, t.missing = gen, 0
	t.life.listed()
	if t.path != path {
		old := t.path
		setPath(set.files, t, path) // renamed within the globs: same identity
		set.rep.logFile(slog.LevelInfo, "file renamed", t, t.offset, "old_path", old)
	}
	size, mod := fi.Size(), fi.ModTime()
	if r := t.resume; r != nil {
		set.continueCopy(t, r.offset, r.line, r.from)
	}
	set.releaseHold(t, size)
	changed := size != t.lastSize || !mod.Equal(t.lastMod)
	if !t.fp.Full() && size > int64(t.fp.Len()) {
		set.files.MarkStale(t)
	}
	switch {
	case t.copyOf != nil:
		// A copy waiting for its original is not read (rotation_copies.go),
		// unless it does what a copy does not: grow past its original,
		// or shrink. Then it is a live file that starts like the other.
		switch src := t.copyOf; {
		case size > sizeNow(set.openFile, src) && size >= src.offset:
			if set.truncatedUnnoticed(src) {
				break // its copies, t too, continue from where it was delivered
			}
			if !sameContent(set.openFile, t, size, src) {
				set.release(t)
				break
			}
			set.takeOver(t, src)
		case size < t.lastSize:
			set.continueCopy(t, src.offset, src.line, src.path)
		}
	case t.f != nil:
		if size > t.readPos {
			t.life.grew() // grew: not a candidate for eviction or closing
		}
		set.checkShrunk(t, size)
		if changed && size <= t.readPos && t.readPos > 0 {
			// Modified without growing: truncated and rewritten to the
			// same size or less? Only the first bytes can tell.
			set.checkRewritten(t)
		}
	case changed || size < t.readPos || t.life.failed():
		t.life.pending()
	}
	t.lastMod = mod
	t.lastSize = size
}

// truncatedUnnoticed reports whether t no longer starts with its
// fingerprint, and if so takes note of the truncation. An original
// truncated and refilled with less than its copy holds, before a read
// noticed, looks smaller than its copy: only its first bytes tell that it
// did not shrink into a copy of it.
func (set *fileSet) truncatedUnnoticed(t *tracked) bool {
	tf, done, ok := fileOf(set.openFile, t)
	if !ok {
		return false
	}
	head, err := fingerprint.Read(tf, set.cfg.FingerprintBytes, nil)
	done()
	if err != nil || t.fp.Matches(head) {
		return false
	}
	set.truncate(t, head)
	if t.f == nil {
		t.life.pending()
	}
	return true
}

// sameContent reports whether t (size bytes) still holds what src holds,
// as far as the shorter goes (sameBytes). A file taken for a copy while
// it held fewer bytes than fingerprint-bytes matched on those few only
// (files that start with the same timestamp); grown, it may turn out to
// be another file.
func sameContent(open func(string) (*os.File, error), t *tracked, size int64, src *tracked) bool {
	tf, tdone, ok := fileOf(open, t)
	if !ok {
		return true // nothing better to go by: the sizes decide
	}
	defer tdone()
	sf, sdone, ok := fileOf(open, src)
	if !ok {
		return true
	}
	defer sdone()
	fi, err := sf.Stat()
	if err != nil {
		return true
	}
	return sameBytes(tf, size, sf, fi.Size(), int64(min(t.fp.Len(), src.fp.Len())))
}

// release makes t, which waited as a copy of a file it turned out not to
// copy, a file of its own, read on from its offset.
func (set *fileSet) release(t *tracked) {
	src := t.copyOf
	src.copies--
	t.copyOf = nil
	t.life.pending()
	set.rep.logFile(slog.LevelInfo, "file taken for a copy holds other content; reading it as a file of its own", t, t.offset,
		"copy_of", src.path)
}

// reusedInode reports whether path, which holds t's device+inode under
// another name, is a new file in the inode of t's deleted file rather than
// t renamed. Only a closed t can be: an open descriptor keeps its inode
// from reuse. A rename keeps the content, so a file that does not start
// with t's fingerprint is another; nor is t, when it was empty and never
// read, told from a new file by anything but its inode, and taking it for
// one keeps the new file from being checked for a copy (copytruncate):
// its lines would be read again from byte 0.
func (set *fileSet) reusedInode(t *tracked, path string) bool {
	if t.f != nil || t.path == path {
		return false
	}
	if fi, err := set.fsys.Stat(t.path); err == nil {
		if id, _, ok := idOf(t.path, fi); ok && id == t.id {
			return false // a second name (hard link) of t
		}
	}
	f, err := set.openFile(path)
	if err != nil {
		return false
	}
	cur, err := fingerprint.Read(f, set.cfg.FingerprintBytes, set.rd.fpBuf)
	_ = f.Close()
	if err != nil {
		return false
	}
	if t.fp.Len() == 0 {
		return t.readPos == 0 && len(cur) > 0
	}
	return !t.fp.Matches(cur)
}

// forgetReused forgets t, whose inode now holds another file (at path),
// so that file is discovered as new; t's unread bytes are lost with it,
// unless a copy of it shows up.
func (set *fileSet) forgetReused(t *tracked, path string) {
	if t.copies == 0 && t.fp.Len() > 0 {
		// Its content may live on in a copy (copytruncate, then the
		// original deleted): it stays findable, as a truncated file's.
		set.em.setPrior(t, t.delivered(), set.mg.scanGen, set.mg.lastScan)
	}
	if lost := unreadBytes(t); lost > 0 {
		set.em.emitLoss(t.key, t.path, input.LossDeleted, t.readPos, t.lastSize)
		set.rep.logFile(slog.LevelWarn, "file deleted or rotated away while closed; its unread bytes are lost", t, t.offset,
			"lost_bytes", lost)
	}
	set.retire(t, "deleted while closed; its inode now holds another file", "new_path", path)
}

// unseen handles a tracked file that no glob matched in this scan: an open
// one is read to its end first (rename rotation, deletion); a closed one
// is forgotten after two scans (a rename between listing and stat must
// not lose its position).
func (set *fileSet) unseen(t *tracked) error {
	t.missing++
	if t.missing == 1 {
		if fi, err := set.fsys.Stat(t.path); err == nil && fi.IsDir() {
			if err := set.rep.fileErr("read", t.path, errReplacedByDir); err != nil {
				return err
			}
		}
	}
	set.releaseHold(t, -1)
	if t.copyOf != nil || t.resume != nil {
		if t.missing >= 2 {
			// Its content is its original's, read there.
			set.retire(t, "copy deleted or renamed out of the globs before its original was truncated")
		}
		return nil
	}
	if t.f == nil {
		if t.missing >= 2 && !(t.life.away() && t.life.needsRead()) { // a file moved while stopped waits for a descriptor
			// Without a descriptor nothing more can be read: bytes
			// written after the last read are lost, and the operator
			// must hear about it.
			if lost := unreadBytes(t); lost > 0 {
				set.em.emitLoss(t.key, t.path, input.LossGone, t.readPos, t.lastSize)
				set.rep.logFile(slog.LevelWarn, "file deleted or rotated away while closed; its unread bytes are lost", t, t.offset,
					"lost_bytes", lost)
			}
			set.retire(t, "deleted or renamed out of the globs while closed")
		}
		return nil
	}
	set.unseenOpen(t)
	return nil
}

// unseenOpen handles an open file no glob matched: deleted, it is read to
// its end; renamed out of the globs, until quiet for close-inactive.
func (set *fileSet) unseenOpen(t *tracked) {
	fi, err := t.f.Stat()
	if err != nil {
		if t.missing >= 2 {
			set.markGone(t)
		}
		return
	}
	switch _, nlink, ok := idOfOpen(t.f, fi); {
	case ok && nlink == 0:
		set.markGone(t) // deleted: nothing can write to its name any more
	case t.missing >= 2 && !t.life.away():
		// Renamed out of the globs (rename rotation to a name they do not
		// cover): the application writes on through its descriptor until
		// it reopens its log, which can be minutes later. Finishing the
		// file at its first EOF would lose those lines; it is read until
		// close-inactive instead, as for any quiet file.
		t.life.markAway()
		set.rep.logFile(slog.LevelInfo, "file renamed out of the globs; reading it until quiet for close-inactive", t, t.offset)
	}
	if size := fi.Size(); size <= t.readPos && t.readPos > 0 && !fi.ModTime().Equal(t.lastMod) {
		// Written without growing since the last scan, then deleted or
		// renamed away: rewritten to the same size? Only the first bytes
		// can tell, and no later scan will look (as in seen).
		t.lastMod = fi.ModTime()
		set.checkRewritten(t)
	}
	set.checkShrunk(t, fi.Size())
}

// markGone records that t was deleted: it is read to its end, then
// forgotten. Logged once, when it is first noticed.
func (set *fileSet) markGone(t *tracked) {
	if t.life.gone() {
		return
	}
	t.life.markGone()
	set.rep.logFile(slog.LevelInfo, "file deleted; reading it to its end", t, t.offset)
}

// checkRewritten restarts an open file at 0 when its first bytes no
// longer match the fingerprint.
func (set *fileSet) checkRewritten(t *tracked) {
	cur, err := fingerprint.Read(t.f, set.cfg.FingerprintBytes, set.rd.fpBuf)
	if err == nil && !t.fp.Matches(cur) {
		set.truncate(t, cur)
	}
}

// checkShrunk restarts an open file at 0 when it is smaller than what was
// read (copytruncate).
func (set *fileSet) checkShrunk(t *tracked, size int64) {
	if size >= t.readPos || t.behind {
		return
	}
	if cur, err := fingerprint.Read(t.f, set.cfg.FingerprintBytes, set.rd.fpBuf); err == nil {
		set.truncate(t, cur)
	}
}
