package glob

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// MaxDepth bounds the walk below a pattern's base directory. Links to
// directories are never followed, so only a real tree this deep reaches
// it; the bound keeps a pathological tree from recursing without end.
const MaxDepth = 64

// ErrTooDeep is reported to onErr for a directory whose subdirectories
// were not walked because they lie more than MaxDepth levels below the
// pattern's base.
var ErrTooDeep = fmt.Errorf("directory nesting deeper than %d levels below the pattern base: not walked", MaxDepth)

// FS is what a walk needs from the file system. OS is the real one;
// tests substitute listings that fail on demand.
type FS interface {
	Stat(name string) (fs.FileInfo, error)
	ReadDir(name string) ([]fs.DirEntry, error)
}

// OS is the operating system's file system.
type OS struct{}

// Stat follows symbolic links, as os.Stat.
func (OS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// ReadDir lists a directory sorted by name, as os.ReadDir.
func (OS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// ctxCheckEvery is how many directory entries are handled between two
// looks at the context, so a huge directory cannot delay a stop.
const ctxCheckEvery = 256

// Walk calls visit for every non-directory path that matches p: regular
// files and symbolic links (the caller stats them to follow links and
// keep only regular files). A directory (or the base) that cannot be
// listed is reported to onErr and skipped, so is a directory below
// MaxDepth (with ErrTooDeep); a base that does not exist is not an error
// (files may appear later). Walk stops and returns ctx.Err() as soon as
// it sees ctx done.
func (p *Pattern) Walk(ctx context.Context, fsys FS, visit func(path string), onErr func(path string, err error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	info, err := fsys.Stat(p.base)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			onErr(p.base, err)
		}
		return nil
	}
	w := walker{ctx: ctx, fsys: fsys, visit: visit, onErr: onErr}
	if p.literal {
		if !info.IsDir() {
			visit(p.base)
			return nil
		}
		// A plain directory means every file below it.
		w.descend = func([]string) bool { return true }
		w.match = w.descend
	} else {
		if !info.IsDir() {
			return nil
		}
		w.descend, w.match = p.mayHold, p.matchesBelow
	}
	return w.dir(p.base, nil)
}

type walker struct {
	ctx            context.Context
	fsys           FS
	descend, match func([]string) bool
	visit          func(string)
	onErr          func(string, error)
}

func (w *walker) dir(dir string, rel []string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	entries, err := w.fsys.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			w.onErr(dir, err)
		}
		return nil
	}
	tooDeep := false
	for i, e := range entries {
		if i%ctxCheckEvery == ctxCheckEvery-1 {
			if err := w.ctx.Err(); err != nil {
				return err
			}
		}
		sub := append(rel[:len(rel):len(rel)], e.Name())
		full := filepath.Join(dir, e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			if !w.descend(sub) {
				continue
			}
			if len(sub) > MaxDepth {
				tooDeep = true
				continue
			}
			if err := w.dir(full, sub); err != nil {
				return err
			}
		case t.IsRegular() || t&fs.ModeSymlink != 0:
			if w.match(sub) {
				w.visit(full)
			}
		}
	}
	if tooDeep {
		w.onErr(dir, ErrTooDeep)
	}
	return nil
}
