package processing

import "testing"

func TestTypicalChain(t *testing.T) {
	c := mustChain(t,
		Step{Parse: &ParseConfig{Format: "json"}},
		Step{Drop: `payload.level == "debug"`},
		Step{Redact: &RedactConfig{Detectors: []string{"email", "credit-card"}}},
		Step{Set: map[string]string{"site": "plant-7", "env": "prod"}},
	)
	got := runOne(t, c, line(`{"level":"info","msg":"user bob@example.com paid with 4111 1111 1111 1111, order 1234567890123"}`, 1))
	want := `{"_file":"/var/log/app.log","_line":1,"_ts":1700000000000,"env":"prod","payload":{"level":"info","msg":"user *************** paid with ***************1111, order 1234567890123"},"site":"plant-7"}`
	if jsonOf(got) != want {
		t.Errorf("got  %s\nwant %s", jsonOf(got), want)
	}
	if got := runOne(t, c, line(`{"level":"debug","msg":"x"}`, 2)); got != nil {
		t.Errorf("debug kept: %v", got)
	}
}
