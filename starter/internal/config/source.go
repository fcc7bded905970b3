package config

import (
	"strings"
)

// place is where a key was written in the file.
type place struct {
	display   string // the key as written, e.g. "input.file.paths[0]"
	line, col int
}

// sourceMap remembers, for each canonical key ("input.paths[0]"), where the
// value that won was written, so Validate can point at the file even for
// problems found after decoding (and for keys relative to input that the
// connector reports).
type sourceMap struct {
	file   string
	places map[string]place
}

func newSourceMap(file string) *sourceMap {
	return &sourceMap{file: file, places: make(map[string]place)}
}

func (s *sourceMap) set(canonical string, p place) { s.places[canonical] = p }

// has reports whether canonical is written in the file (false for a
// Config built in code).
func (s *sourceMap) has(canonical string) bool {
	if s == nil {
		return false
	}
	_, ok := s.places[canonical]
	return ok
}

// fieldError builds the error for a canonical key. A key missing from the
// file is reported at its nearest ancestor that is present (for example a
// missing input.paths points at the input section), still under its own
// name.
func (s *sourceMap) fieldError(canonical string, err error) *FieldError {
	fe := &FieldError{Key: canonical, Err: err}
	if s == nil {
		return fe
	}
	fe.File = s.file
	for k := canonical; k != ""; k = parentKey(k) {
		p, ok := s.places[k]
		if !ok {
			continue
		}
		fe.Key = p.display + canonical[len(k):]
		fe.Line, fe.Column = p.line, p.col
		break
	}
	return fe
}

func (s *sourceMap) warning(canonical, msg string) Warning {
	fe := s.fieldError(canonical, nil)
	return Warning{File: fe.File, Key: fe.Key, Line: fe.Line, Column: fe.Column, Message: msg}
}

// parentKey strips the last ".name" or "[i]" from a key.
func parentKey(k string) string {
	i := strings.LastIndexAny(k, ".[")
	if i <= 0 {
		return ""
	}
	return k[:i]
}
