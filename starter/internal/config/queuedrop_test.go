package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
)

func TestInputQueueDrop(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // each input's QueueDrop as the agent gets it
	}{
		{"unset", "inputs:\n  - id: a\n    paths: [/a]\n", []string{""}},
		{"each value", "inputs:\n  - id: a\n    paths: [/a]\n    queue-drop: first\n  - id: b\n    paths: [/b]\n    queue-drop: never\n  - id: c\n    paths: [/c]\n    queue-drop: normal\n",
			[]string{agent.QueueDropFirst, agent.QueueDropNever, agent.QueueDropNormal}},
		{"single input", "input:\n  paths: [/a]\n  queue-drop: never\n", []string{agent.QueueDropNever}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := loadText(t, tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, sp := range cfg.AgentOptions().InputList {
				got = append(got, sp.QueueDrop)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("queue-drop %q, want %q", got, tc.want)
			}
		})
	}
}

func TestInputQueueDropRejects(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown value", "inputs:\n  - id: a\n    paths: [/a]\n    queue-drop: oldest\n",
			`agent.yaml:4:5: inputs[0].queue-drop: must be normal (the default), first or never, got "oldest"`},
		{"case matters", "input:\n  paths: [/a]\n  queue-drop: Never\n",
			`agent.yaml:3:3: input.queue-drop: must be normal (the default), first or never, got "Never"`},
		{"not a string", "inputs:\n  - id: a\n    paths: [/a]\n    queue-drop: [first]\n",
			"agent.yaml:4:5: inputs[0].queue-drop: expected a string, got a list"},
		{"inside the type block", "inputs:\n  - id: a\n    file:\n      paths: [/a]\n      queue-drop: first\n",
			"inputs[0].file.queue-drop: unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := loadText(t, tc.yaml)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
		})
	}
}

// A queue-drop change restarts that input, so the reload applies it.
func TestChangesQueueDrop(t *testing.T) {
	base, _, err := loadText(t, twoInputs)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(twoInputs, "  - id: db\n", "  - id: db\n    queue-drop: first\n", 1)
	if edited == twoInputs {
		t.Fatal("fixture changed: no db entry")
	}
	next, _, err := loadText(t, edited)
	if err != nil {
		t.Fatal(err)
	}
	if ch := base.Changes(next); !slices.Equal(ch.Inputs, []string{"db"}) {
		t.Fatalf("changes %+v, want inputs [db]", ch)
	}
}
