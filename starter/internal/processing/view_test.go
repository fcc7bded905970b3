package processing

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// The view keeps what shapes and redacts the event up to the last
// redact, and hides what the redaction hides.
func TestRedactionView(t *testing.T) {
	steps := []Step{
		{Parse: &ParseConfig{}},
		{Drop: `level == "debug"`},
		{Sample: &SampleConfig{}},
		{Redact: &RedactConfig{Patterns: map[string]string{"pin": `pin=\d+`}}},
		{Set: map[string]string{"after": "x"}},
	}
	var kinds []string
	for _, s := range RedactionView(steps) {
		kinds = append(kinds, s.Kind())
	}
	if !slices.Equal(kinds, []string{"parse", "redact"}) {
		t.Fatalf("view kinds %v", kinds)
	}
	if v := RedactionView(steps[:3]); v != nil {
		t.Fatalf("view of steps without redact: %v", v)
	}
	c, err := New(RedactionView([]Step{{Redact: &RedactConfig{Patterns: map[string]string{"pin": `pin=\d+`}}}}), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	evs := c.Process([]input.Event{{Payload: []byte(`{"payload":"login pin=1234 ok"}`)}}, 0, time.Now())
	if got := string(evs[0].Payload); strings.Contains(got, "1234") || !strings.Contains(got, "login") {
		t.Fatalf("view of the event: %s", got)
	}
}
