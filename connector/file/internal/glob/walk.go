package glob

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// maxDepth bounds the walk below a pattern's base directory.
const maxDepth = 64

// Walk calls visit for every non-directory path that matches p: regular
// files and symbolic links (the caller stats them to follow links and
// keep only regular files). Directories that cannot be read are reported
// to onErr and skipped; a base that does not exist is not an error (files
// may appear later).
func (p *Pattern) Walk(visit func(path string), onErr func(path string, err error)) {
	info, err := os.Stat(p.base)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			onErr(p.base, err)
		}
		return
	}
	if p.literal {
		if !info.IsDir() {
			visit(p.base)
			return
		}
		// A plain directory means every file below it.
		walkDir(p.base, nil, func([]string) bool { return true }, func([]string) bool { return true }, visit, onErr)
		return
	}
	if !info.IsDir() {
		return
	}
	walkDir(p.base, nil, p.canDescend, p.matchRel, visit, onErr)
}

func walkDir(dir string, rel []string, descend, match func([]string) bool, visit func(string), onErr func(string, error)) {
	if len(rel) > maxDepth {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			onErr(dir, err)
		}
		return
	}
	for _, e := range entries {
		sub := append(rel[:len(rel):len(rel)], e.Name())
		full := filepath.Join(dir, e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			if descend(sub) {
				walkDir(full, sub, descend, match, visit, onErr)
			}
		case t.IsRegular() || t&fs.ModeSymlink != 0:
			if match(sub) {
				visit(full)
			}
		}
	}
}
