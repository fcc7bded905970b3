//go:build unix

package e2e

import (
	"strings"
	"testing"
)

// check output authenticates against the receiver without sending a batch:
// exit 0 with the right token, 4 and the fix with a wrong one, and never
// the token in what it prints.
func TestCheckOutput(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	root := newRoot(t, options{port: port})
	w := root.createFile("in/app.log")
	w.lines([]string{"must not be sent by a check"})
	w.close()

	out, errOut, code := root.cli("check", "output")
	if code != 0 {
		t.Fatalf("right token: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	t.Logf("check output:\n%s", out)
	for _, want := range []string{"resolve  OK", "connect  OK", "tls      SKIP", "auth     OK", "accepted output.token"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}

	root.opts.token = "not-the-receivers-token"
	root.writeConfig()
	out, errOut, code = root.cli("check", "output", "--config", root.configPath())
	if code != 4 {
		t.Fatalf("wrong token: exit %d, want 4\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(out, "auth     FAIL") || !strings.Contains(errOut, "fix: output.token must equal the EdgeSocket source's token") {
		t.Errorf("wrong token:\nstdout: %s\nstderr: %s", out, errOut)
	}
	if containsAny(out+errOut, "e2e-token-0123456789", "not-the-receivers-token") {
		t.Error("check output printed a token")
	}

	rc.stop()
	if got := rc.received(); len(got) != 0 {
		t.Errorf("the receiver got events from a check: %v", got)
	}
}
