package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/stdin"
)

// LoadOptions.StdinInput (edge-agent start --stdin) makes stdin the only
// input of a config that names none, adds an entry to an inputs list, and
// refuses a single input section, naming the key.
func TestStdinInput(t *testing.T) {
	const output = "output:\n  type: console\n"
	for _, tc := range []struct {
		name string
		text string
		// wantType is the single input's type, or "" when an inputs
		// list is expected with wantIDs.
		wantType string
		wantIDs  []string
		wantErr  string // a problem at key "input" or "inputs[...]"
	}{
		{name: "no input section", text: output, wantType: "stdin"},
		{name: "inputs list", text: output + "inputs:\n  - {id: app, paths: [/var/log/app.log]}\n", wantIDs: []string{"app", StdinInputID}},
		{name: "single input section", text: output + "input:\n  paths: [/var/log/app.log]\n", wantErr: "needs an inputs list"},
		{name: "an entry already named stdin", text: output + "inputs:\n  - {id: stdin, paths: [/var/log/app.log]}\n", wantErr: "stdin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := LoadOptions{Registry: input.NewRegistry(file.NewFactory(), stdin.NewFactory()), Outputs: testOutputs(),
				Getenv: env{}.get, StdinInput: true}
			cfg, _, err := Load(writeConfig(t, tc.text), opts)
			if tc.wantErr != "" {
				var fe *FieldError
				if !errors.As(err, &fe) || !strings.HasPrefix(fe.Key, "input") || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want a problem at input… saying %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantType != "" {
				if len(cfg.Inputs) != 1 || !cfg.Inputs[0].OptionalID || cfg.Inputs[0].Type != tc.wantType {
					t.Fatalf("inputs %+v, want the single input: form of type %q", cfg.Inputs, tc.wantType)
				}
				if _, ok := cfg.Inputs[0].Config.(*stdin.Config); !ok {
					t.Fatalf("input config %T", cfg.Inputs[0].Config)
				}
				return
			}
			var ids []string
			for _, e := range cfg.Inputs {
				ids = append(ids, e.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.wantIDs, ",") {
				t.Fatalf("ids %v, want %v", ids, tc.wantIDs)
			}
			if _, ok := cfg.Inputs[len(cfg.Inputs)-1].Config.(*stdin.Config); !ok {
				t.Fatalf("last entry is %T", cfg.Inputs[len(cfg.Inputs)-1].Config)
			}
		})
	}
	// Without the option, a config without input is still refused.
	if _, _, err := Load(writeConfig(t, output), LoadOptions{Registry: input.NewRegistry(file.NewFactory(), stdin.NewFactory()),
		Outputs: testOutputs(), Getenv: env{}.get}); err == nil || !strings.Contains(err.Error(), "input must be defined") {
		t.Fatalf("no input, no --stdin: %v", err)
	}
}
