package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/file"
)

const twoInputs = `inputs:
  - id: app
    paths: [/var/log/app/*.log]
    multiline:
      pattern: '^\s'
      negate: true
    fields: {app: shop}
    add-host-fields: true
    include-lines: ['^(INFO|ERROR)']
  - id: db
    file:
      paths: [/var/log/db/*.log]
    exclude-lines: [DEBUG]
`

func TestLoadInputsList(t *testing.T) {
	cfg, warns, err := loadText(t, twoInputs)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Fatalf("warnings: %v", warns)
	}
	if len(cfg.Inputs) != 2 || cfg.Inputs[0].OptionalID || cfg.Inputs[1].Key != "inputs[1]" {
		t.Fatalf("inputs %+v", cfg.Inputs)
	}
	app, db := cfg.Inputs[0].Config.(*file.Config), cfg.Inputs[1].Config.(*file.Config)
	if cfg.Inputs[0].ID != "app" || cfg.Inputs[1].ID != "db" || cfg.Inputs[1].Type != "file" {
		t.Fatalf("entries %+v", cfg.Inputs)
	}
	if app.Multiline.Pattern != `^\s` || app.Fields["app"] != "shop" || !app.AddHostFields || len(app.IncludeLines) != 1 {
		t.Fatalf("app %+v", app)
	}
	if db.Multiline.Pattern != "" || !slices.Equal(db.Paths, []string{"/var/log/db/*.log"}) || db.ExcludeLines[0] != "DEBUG" {
		t.Fatalf("db %+v", db)
	}
	specs := cfg.AgentOptions().InputList
	if len(specs) != 2 || specs[1].ID != "db" || specs[1].Config != cfg.Inputs[1].Config {
		t.Fatalf("agent options %+v", specs)
	}
}

func TestLoadInputsRejects(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"both forms", "input:\n  paths: [/a]\ninputs:\n  - id: x\n    paths: [/b]\n",
			"agent.yaml:3:1: input and inputs are both set; keep one"},
		{"missing id", "inputs:\n  - paths: [/a]\n", "agent.yaml:2:5: inputs[0].id: every entry of inputs needs an id"},
		{"duplicate id", "inputs:\n  - id: x\n    paths: [/a]\n  - id: x\n    paths: [/b]\n",
			`agent.yaml:4:5: inputs[1].id: id "x" is also the id of inputs[0]; ids must be unique`},
		{"not a list", "inputs:\n  id: x\n", "agent.yaml:1:1: expected a list of inputs, got a mapping"},
		{"empty list", "inputs: []\n", "inputs: must list at least one input"},
		{"entry problem keyed", "inputs:\n  - id: x\n    paths: [/a]\n    max-line-bytes: 1\n",
			"agent.yaml:4:5: inputs[0].max-line-bytes: must be between"},
		{"typo in entry", "inputs:\n  - id: x\n    pathz: [/a]\n", "agent.yaml:3:5: inputs[0].pathz: unknown key; did you mean inputs[0].paths?"},
		{"bad include regexp", "input:\n  paths: [/a]\n  include-lines:\n    - ok\n    - '(['\n",
			"agent.yaml:5:7: input.include-lines[1]: invalid regular expression"},
		{"bad exclude regexp in list", "inputs:\n  - id: x\n    paths: [/a]\n    exclude-lines: ['a{2,1}']\n",
			"agent.yaml:4:21: inputs[0].exclude-lines[0]: invalid regular expression"},
		{"field collides", "input:\n  paths: [/a]\n  fields:\n    env: prod\n    payload: x\n",
			`agent.yaml:5:5: input.fields.payload: "payload" is a key the input writes itself`},
		{"field not a string", "input:\n  paths: [/a]\n  fields:\n    env: [a]\n",
			"agent.yaml:4:5: input.fields.env: expected a string, got a list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := loadText(t, tc.yaml)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "input must be defined") {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
		})
	}
}

func TestLoadInputsOverlapWarns(t *testing.T) {
	_, warns, err := loadText(t, `inputs:
  - id: all
    paths: [/var/log/app/*.log]
  - id: one
    paths: [/var/log/db/x.log, /var/log/app/a.log]
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].String(), `agent.yaml:5:32: inputs[1].paths[1]: /var/log/app/a.log is also read by inputs[0] (id "all")`) {
		t.Fatalf("warnings %v", warns)
	}
}

func TestChangesInputs(t *testing.T) {
	base, _, err := loadText(t, twoInputs)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(twoInputs, "exclude-lines: [DEBUG]", "exclude-lines: [TRACE]", 1)
	added := twoInputs + "  - id: web\n    paths: [/var/log/web/*.log]\n"
	removed := twoInputs[:strings.Index(twoInputs, "  - id: db")]
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unchanged", twoInputs, nil},
		{"one edited", edited, []string{"db"}},
		{"one added", added, []string{"web"}},
		{"one removed", removed, []string{"db"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, _, err := loadText(t, tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			ch := base.Changes(next)
			if !slices.Equal(ch.Inputs, tc.want) || slices.Contains(ch.Sections, "input") {
				t.Fatalf("changes %+v, want inputs %v", ch, tc.want)
			}
			if got := slices.Contains(ch.Sections, "inputs"); got != (len(tc.want) > 0) {
				t.Fatalf("sections %v", ch.Sections)
			}
		})
	}
}
