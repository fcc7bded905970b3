package file

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// findMovedWhileStopped looks for the files of the saved positions that
// the first scan's globs did not find. A rename rotation while the agent
// was stopped (app.log → app.log.1, a new app.log) keeps the file in its
// directory, under a name the globs may not match: the same device+inode
// there, still starting with the saved fingerprint, is that file. It is
// read from its saved offset until quiet for close-inactive, then
// forgotten, like a file renamed out of the globs while open. Positions
// still unmatched are reported lost when they are dropped (scan).
func (set *fileSet) findMovedWhileStopped(ctx context.Context, now time.Time, failed map[string]struct{}) error {
	for _, dir := range set.files.SavedDirs() {
		if err := ctx.Err(); err != nil {
			set.mg.rescan = true
			return fmt.Errorf("scan: %w", err)
		}
		if underAny(dir, failed) {
			continue
		}
		entries, err := set.fsys.ReadDir(dir)
		if err != nil {
			continue // gone or unreadable: the positions are dropped as not found
		}
		for _, e := range entries {
			if !set.files.HasSaved() {
				return nil
			}
			if !e.Type().IsRegular() {
				continue
			}
			if err := set.resumeMoved(filepath.Join(dir, e.Name()), now); err != nil {
				return err
			}
		}
	}
	return nil
}

// resumeMoved resumes path if it is the file of a saved position.
func (set *fileSet) resumeMoved(path string, now time.Time) error {
	fi, err := set.fsys.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	id, _, ok := idOf(path, fi)
	if _, known := set.files.ID(id); !ok || known {
		return nil
	}
	ss := set.files.SavedOn(id)
	if len(ss) == 0 {
		return nil
	}
	// Only a file still holding the saved content: an inode reused by an
	// unrelated file is not one to read.
	f, err := set.openFile(path)
	if err != nil {
		return nil
	}
	cur, err := fingerprint.Read(f, set.cfg.FingerprintBytes, set.rd.fpBuf)
	_ = f.Close()
	if err != nil {
		return nil
	}
	key, was := "", ""
	for _, s := range ss {
		if fingerprint.MatchesSum(cur, s.Sum) && fi.Size() >= s.Offset {
			key, was = s.Key, s.Path
			break
		}
	}
	if key == "" {
		return nil
	}
	if err := set.discover(candidate{path: path, size: fi.Size(), mod: fi.ModTime(), id: id}, now); err != nil {
		return err
	}
	t, ok := set.files.Key(key)
	if !ok {
		return nil // it changed in between; the positions are dropped as not found
	}
	t.missing = 2
	t.life.markMoved()
	set.rep.logFile(slog.LevelInfo, "file renamed while the agent was stopped, to a name the globs do not match; reading it until quiet for close-inactive", t, t.offset,
		"old_path", was)
	return nil
}
