package file

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// errReplacedByDir reports a watched file whose name now holds a directory.
var errReplacedByDir = errors.New("file was replaced by a directory")

type candidate struct {
	path string
	fi   os.FileInfo
	id   fileID
}

// scan expands the globs and reconciles what it finds with the tracked
// files: known identities get their new name and size, new ones are
// discovered (oldest first), and files no longer found are finished and
// forgotten. Polling is the source of truth; fsnotify only makes it run
// sooner.
func (in *Input) scan(now time.Time) error {
	in.lastScan = now
	in.rescan = false
	in.scanGen++
	gen := in.scanGen

	var firstErr error
	onErr := func(path string, err error) {
		if e := in.fileErr("scan", path, err); e != nil && firstErr == nil {
			firstErr = e
		}
	}
	visited := make(map[string]struct{})
	var fresh []candidate
	freshIDs := make(map[fileID]struct{})
	for _, p := range in.pats {
		p.Walk(func(path string) {
			if _, dup := visited[path]; dup {
				return
			}
			visited[path] = struct{}{}
			if in.excluded(path) {
				return
			}
			fi, err := os.Stat(path) // follows symlinks: identity of the target
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					onErr(path, err)
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
			if t := in.byID[id]; t != nil {
				if t.seenScan != gen { // a second name of the same file keeps the first
					in.seen(t, path, fi, gen)
				}
				return
			}
			if _, dup := freshIDs[id]; !dup {
				freshIDs[id] = struct{}{}
				fresh = append(fresh, candidate{path: path, fi: fi, id: id})
			}
		}, onErr)
		if firstErr != nil {
			return firstErr
		}
	}

	for _, t := range in.ring {
		if t.dead || t.seenScan == gen {
			continue
		}
		if err := in.unseen(t); err != nil {
			return err
		}
	}

	// New files oldest first, as the Java agent orders them.
	slices.SortStableFunc(fresh, func(a, b candidate) int { return a.fi.ModTime().Compare(b.fi.ModTime()) })
	for _, c := range fresh {
		if err := in.discover(c, now); err != nil {
			return err
		}
	}

	if len(in.saved) > 0 {
		// Positions whose file was not found in two scans are dropped so
		// positions do not accumulate forever.
		in.savedScans++
		if in.savedScans >= 2 {
			for id, ss := range in.saved {
				for _, s := range ss {
					in.emitForget(s.key)
				}
				delete(in.saved, id)
			}
		}
	}
	in.compactRing()
	if in.watch != nil {
		in.watch.sync(in.watchDirs())
	}
	return nil
}

func (in *Input) excluded(path string) bool {
	for _, p := range in.excludes {
		if p.Match(path) {
			return true
		}
	}
	return false
}

// seen updates a known file matched by this scan.
func (in *Input) seen(t *tracked, path string, fi os.FileInfo, gen uint64) {
	t.seenScan, t.missing, t.gone = gen, 0, false
	if t.path != path {
		t.setPath(path) // renamed within the globs: same identity
	}
	size, mod := fi.Size(), fi.ModTime()
	changed := size != t.lastSize || !mod.Equal(t.lastMod)
	if t.f != nil {
		if size > t.readPos {
			t.atEOF = false // grew: not a candidate for eviction or closing
		}
		in.checkShrunk(t, size)
		if changed && size <= t.readPos && t.readPos > 0 {
			// Modified without growing: truncated and rewritten to the
			// same size or less? Only the first bytes can tell.
			in.checkRewritten(t)
		}
	} else if changed || size < t.readPos || t.failed {
		t.needsRead = true
	}
	t.lastMod = mod
	t.lastSize = size
}

// unseen handles a tracked file that no glob matched in this scan: an open
// one is read to its end first (rename rotation, deletion); a closed one
// is forgotten after two scans (a rename between listing and stat must
// not lose its position).
func (in *Input) unseen(t *tracked) error {
	t.missing++
	if t.missing == 1 {
		if fi, err := os.Stat(t.path); err == nil && fi.IsDir() {
			if err := in.fileErr("read", t.path, errReplacedByDir); err != nil {
				return err
			}
		}
	}
	if t.f == nil {
		if t.missing >= 2 {
			in.retire(t)
		}
		return nil
	}
	if t.missing >= 2 {
		t.gone = true
	}
	if fi, err := t.f.Stat(); err == nil {
		if _, nlink, ok := idOf(t.path, fi); ok && nlink == 0 {
			t.gone = true // deleted: nothing can write to its name any more
		}
		in.checkShrunk(t, fi.Size())
	}
	return nil
}

// checkRewritten restarts an open file at 0 when its first bytes no
// longer match the fingerprint.
func (in *Input) checkRewritten(t *tracked) {
	cur, err := fingerprint.Read(t.f, in.cfg.FingerprintBytes, in.fpBuf)
	if err == nil && !t.fp.Matches(cur) {
		in.truncate(t, cur)
	}
}

// checkShrunk restarts an open file at 0 when it is smaller than what was
// read (copytruncate).
func (in *Input) checkShrunk(t *tracked, size int64) {
	if size >= t.readPos {
		return
	}
	if cur, err := fingerprint.Read(t.f, in.cfg.FingerprintBytes, in.fpBuf); err == nil {
		in.truncate(t, cur)
	}
}
