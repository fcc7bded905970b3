package glob

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// ErrBadPattern is returned by Compile for malformed patterns.
var ErrBadPattern = errors.New("bad glob pattern")

// Pattern is one compiled pattern (after brace expansion).
type Pattern struct {
	raw     string
	segs    []string // segments after the root
	base    string   // longest directory prefix without meta characters
	literal bool     // no meta characters at all
}

// CompileAll compiles a configured pattern into one Pattern per brace
// alternative.
func CompileAll(pattern string) ([]*Pattern, error) {
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	out := make([]*Pattern, 0, len(alts))
	for _, a := range alts {
		p, err := compile(a)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// CompileExclude compiles an exclude pattern. A pattern without a path
// separator matches the file's base name anywhere (e.g. "*.gz").
func CompileExclude(pattern string) ([]*Pattern, error) {
	if !strings.Contains(filepath.ToSlash(pattern), "/") {
		pattern = "/**/" + pattern
	}
	return CompileAll(pattern)
}

func compile(pattern string) (*Pattern, error) {
	if strings.TrimSpace(pattern) == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadPattern)
	}
	abs, err := filepath.Abs(pattern)
	if err != nil {
		return nil, fmt.Errorf("resolve pattern %q: %w", pattern, err)
	}
	slashed := filepath.ToSlash(abs)
	segs := strings.Split(strings.TrimPrefix(slashed, "/"), "/")
	p := &Pattern{raw: slashed, segs: segs, literal: true}
	baseSegs := 0
	for i, s := range segs {
		if s == "**" || hasMeta(s) {
			p.literal = false
			break
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("%w %q: %v", ErrBadPattern, pattern, err)
		}
		baseSegs = i + 1
	}
	for _, s := range segs {
		if s != "**" {
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("%w %q: %v", ErrBadPattern, pattern, err)
			}
		}
	}
	if p.literal {
		baseSegs = len(segs)
	} else if baseSegs == len(segs) {
		baseSegs--
	}
	p.base = filepath.FromSlash("/" + strings.Join(segs[:baseSegs], "/"))
	return p, nil
}

// String returns the absolute pattern.
func (p *Pattern) String() string { return p.raw }

// Base is the directory the walk starts from (for a literal pattern, the
// path itself).
func (p *Pattern) Base() string { return p.base }

// Literal reports whether the pattern has no meta characters.
func (p *Pattern) Literal() bool { return p.literal }

// Match reports whether the absolute path name matches.
func (p *Pattern) Match(name string) bool {
	s := strings.Split(strings.TrimPrefix(filepath.ToSlash(name), "/"), "/")
	return matchSegs(p.segs, s)
}

func (p *Pattern) baseDepth() int {
	b := strings.Trim(filepath.ToSlash(p.base), "/")
	if b == "" {
		return 0
	}
	return strings.Count(b, "/") + 1
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

func prefixPossible(pat, dir []string) bool {
	for len(dir) > 0 {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[0], dir[0]); !ok {
			return false
		}
		pat, dir = pat[1:], dir[1:]
	}
	// A file must still match at least one more segment.
	return len(pat) > 0
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// expandBraces expands {a,b} alternatives (nesting allowed).
func expandBraces(p string) ([]string, error) {
	open := strings.IndexByte(p, '{')
	if open < 0 {
		if strings.IndexByte(p, '}') >= 0 {
			return nil, fmt.Errorf("%w %q: unmatched }", ErrBadPattern, p)
		}
		return []string{p}, nil
	}
	depth, closeAt := 0, -1
	var commas []int
	for i := open; i < len(p) && closeAt < 0; i++ {
		switch p[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				closeAt = i
			}
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		}
	}
	if closeAt < 0 {
		return nil, fmt.Errorf("%w %q: unmatched {", ErrBadPattern, p)
	}
	var out []string
	start := open + 1
	for _, c := range append(commas, closeAt) {
		alts, err := expandBraces(p[:open] + p[start:c] + p[closeAt+1:])
		if err != nil {
			return nil, err
		}
		out = append(out, alts...)
		start = c + 1
		if len(out) > 1024 {
			return nil, fmt.Errorf("%w %q: too many alternatives", ErrBadPattern, p)
		}
	}
	return out, nil
}
