package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/edge-agent/edge-agent/starter/internal/check"
)

// ErrInvalid is wrapped by every error that means "agent.yaml is wrong":
// syntax, unknown keys, wrong types, out-of-range values. The CLI maps it to
// exitcode.Config. Errors reading the file itself do not wrap it. It is
// check.ErrInvalid, which the components wrap when handed bad options.
var ErrInvalid = check.ErrInvalid

// FieldError is one problem in a configuration, tied to a key.
//
// Its text is `file:line:col: key: message`; parts that are unknown are
// left out (a Config built in code has no file, a key that is not in the
// file has no line). When the message already names the key, the key is not
// repeated.
type FieldError struct {
	// File is the config path as given to Load ("" for a Config built in code).
	File string
	// Key is the full key as written in the file, e.g.
	// "input.multiline.max-lines" or "input.file.paths[0]".
	Key string
	// Line and Column locate Key in File (1-based); 0 when unknown.
	Line, Column int
	// Err says what is wrong. It never holds a secret value.
	Err error
}

func (e *FieldError) Error() string {
	var b strings.Builder
	writeLocation(&b, e.File, e.Line, e.Column)
	msg := e.Err.Error()
	if e.Key != "" && !namesKey(msg, e.Key) {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(msg)
	return b.String()
}

// Unwrap exposes both ErrInvalid and the cause, so errors.Is works for both.
func (e *FieldError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// Warning is a problem that does not stop the agent (for example a
// deprecated key). Like FieldError it never holds a secret.
type Warning struct {
	File         string
	Key          string
	Line, Column int
	Message      string
}

func (w Warning) String() string {
	var b strings.Builder
	writeLocation(&b, w.File, w.Line, w.Column)
	if w.Key != "" && !namesKey(w.Message, w.Key) {
		b.WriteString(w.Key)
		b.WriteString(": ")
	}
	b.WriteString(w.Message)
	return b.String()
}

// namesKey reports whether msg already names key as a whole word, as in
// "output.endpoint is required", so the prefix would only repeat it.
func namesKey(msg, key string) bool {
	for i := 0; ; {
		j := strings.Index(msg[i:], key)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(key)
		before := start == 0 || msg[start-1] == ' '
		after := end == len(msg) || strings.IndexByte(" ,;:", msg[end]) >= 0
		if before && after {
			return true
		}
		i = start + 1
	}
}

func writeLocation(b *strings.Builder, file string, line, col int) {
	if file == "" {
		return
	}
	b.WriteString(file)
	if line > 0 {
		fmt.Fprintf(b, ":%d:%d", line, col)
	}
	b.WriteString(": ")
}

// problems collects FieldErrors in the order found; join sorts them by
// position so the output reads top to bottom like the file.
type problems struct {
	list []*FieldError
}

func (p *problems) add(e *FieldError) { p.list = append(p.list, e) }

// has reports whether a problem is already recorded for the key; a later
// check of the same key would only repeat it in other words.
func (p *problems) has(key string) bool {
	for _, e := range p.list {
		if e.Key == key {
			return true
		}
	}
	return false
}

func (p *problems) join() error {
	if len(p.list) == 0 {
		return nil
	}
	sorted := append([]*FieldError(nil), p.list...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		// Problems without a line (keys not in the file) go last.
		if (a.Line == 0) != (b.Line == 0) {
			return b.Line == 0
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	errs := make([]error, len(sorted))
	for i, e := range sorted {
		errs[i] = e
	}
	return errors.Join(errs...)
}
