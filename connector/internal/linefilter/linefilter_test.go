package linefilter

import (
	"errors"
	"testing"

	"github.com/edge-agent/edge-agent/connector/input"
)

func TestKeep(t *testing.T) {
	for _, tc := range []struct {
		name             string
		include, exclude []string
		keep, drop       []string
	}{
		{"include only", []string{"^ERR", "WARN"}, nil, []string{"ERR x", "a WARN"}, []string{"INFO"}},
		{"exclude only", nil, []string{"^DEBUG"}, []string{"INFO", "x DEBUG"}, []string{"DEBUG y"}},
		{"exclude after include", []string{"^E"}, []string{"noise"}, []string{"E1"}, []string{"E noise", "I"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, errs := Compile(tc.include, tc.exclude)
			if len(errs) > 0 || f == nil {
				t.Fatalf("Compile: %v", errs)
			}
			for _, s := range tc.keep {
				if !f.Keep([]byte(s)) {
					t.Errorf("%q dropped", s)
				}
			}
			for _, s := range tc.drop {
				if f.Keep([]byte(s)) {
					t.Errorf("%q kept", s)
				}
			}
		})
	}
}

func TestCompileNilAndErrors(t *testing.T) {
	if f, errs := Compile(nil, []string{}); f != nil || errs != nil {
		t.Fatalf("empty lists: %v %v, want nil, nil (no filtering)", f, errs)
	}
	_, errs := Compile([]string{"ok", "("}, []string{"["})
	var keys []string
	for _, e := range errs {
		var fe *input.FieldError
		if errors.As(e, &fe) {
			keys = append(keys, fe.Key)
		}
	}
	if len(keys) != 2 || keys[0] != "include-lines[1]" || keys[1] != "exclude-lines[0]" {
		t.Fatalf("error keys %v", keys)
	}
}
