// Package linefilter is include-lines / exclude-lines, shared by the inputs
// that offer them, applied as Filebeat does: with include-lines set only
// matching events are kept, then any event matching exclude-lines is
// dropped.
package linefilter

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/edge-agent/edge-agent/connector/input"
)

// Filter holds the compiled lists.
type Filter struct {
	include, exclude []*regexp.Regexp
}

// Compile compiles both lists; nil when both are empty, so the read path
// skips filtering entirely. Errors are *input.FieldError keyed by the list
// element ("include-lines[2]").
func Compile(include, exclude []string) (*Filter, []error) {
	var errs []error
	compile := func(key string, pats []string) []*regexp.Regexp {
		out := make([]*regexp.Regexp, 0, len(pats))
		for i, p := range pats {
			re, err := regexp.Compile(p)
			if err != nil {
				errs = append(errs, input.Errorf(fmt.Sprintf("%s[%d]", key, i), "invalid regular expression: %v", err))
				continue
			}
			out = append(out, re)
		}
		return out
	}
	f := &Filter{include: compile("include-lines", include), exclude: compile("exclude-lines", exclude)}
	if len(errs) > 0 || (len(f.include) == 0 && len(f.exclude) == 0) {
		return nil, errs
	}
	return f, nil
}

// Keep reports whether an event whose (first) line is txt is delivered.
func (f *Filter) Keep(txt []byte) bool {
	if len(f.include) > 0 && !slices.ContainsFunc(f.include, func(re *regexp.Regexp) bool { return re.Match(txt) }) {
		return false
	}
	return !slices.ContainsFunc(f.exclude, func(re *regexp.Regexp) bool { return re.Match(txt) })
}
