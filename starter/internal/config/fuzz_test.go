package config

import (
	"errors"
	"os"
	"testing"
)

// FuzzLoad: any bytes give either a Config or an error wrapping
// ErrInvalid, never a panic, never both.
func FuzzLoad(f *testing.F) {
	if b, err := os.ReadFile(examplePath); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		minimal,
		"",
		"input:\n  file:\n    paths: [a]\n    multiline: {pattern: '(', max-lines: 0}\n",
		"agent: &a {id: x}\nqueue:\n  <<: *a\n",
		"x: &a [1, *a]\ninput: *a\n",
		"output:\n  type: transport\n  endpoint: ${H:-h}:1\n  token: ${T}\n",
		"queue:\n  sqlite-path: a\n  path: b\n" + minimal,
		"? [a]\n: b\n",
		"--- !!map\n? a\n: b\n...\n",
		"input: !!str\n",
		"agent:\n  bulk-max-size: 99999999999999999999999\n",
		"input:\n  paths:\n  - !!binary aGVsbG8=\n",
		twoInputs,
		"inputs:\n  - id: a\n    paths: [x]\n    fields: {payload: 1, ? [k] : v, e: ${H}}\n  - &e {id: a, file: {id: b}}\n  - *e\n  -\n",
		"inputs: {id: x}\ninput: {paths: [a]}\n",
		"inputs:\n  - id: x\n    paths: [a]\n    include-lines: ['(', [1]]\n    exclude-lines: x\n",
		"inputs:\n  - id: x\n    paths: [a]\n    queue-drop: never\n  - id: y\n    paths: [b]\n    queue-drop: [first]\n    file: {queue-drop: x}\n",
	} {
		f.Add([]byte(s))
	}
	reg := testRegistry()
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := Load("agent.yaml", LoadOptions{
			Registry: reg,
			Outputs:  testOutputs(),
			Getenv:   env{"H": "host"}.get,
			ReadFile: func(p string) ([]byte, error) {
				if p == "agent.yaml" {
					return data, nil
				}
				return nil, os.ErrNotExist
			},
		})
		if (cfg == nil) == (err == nil) {
			t.Fatalf("cfg=%v err=%v: want exactly one", cfg != nil, err)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error does not wrap ErrInvalid: %v", err)
		}
		if cfg != nil {
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("loaded config fails Validate: %v", verr)
			}
		}
	})
}
