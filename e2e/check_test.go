//go:build unix

package e2e

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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

// check disk times fdatasync in the queue directory, prints the latency,
// the throughput and the wear it means, and leaves nothing behind.
func TestCheckDisk(t *testing.T) {
	t.Parallel()
	// No engine is needed: the output is only configured.
	root := newRoot(t, options{port: 9, queuePath: "spool/wal.db"})
	out, errOut, code := root.cli("check", "disk")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	t.Logf("check disk:\n%s", out)
	median := regexp.MustCompile(`fdatasync: median (\S+), p90 (\S+), slowest (\S+)`).FindStringSubmatch(out)
	if median == nil {
		t.Fatalf("no fdatasync line:\n%s", out)
	}
	var lat [3]time.Duration
	for i := range lat {
		d, err := time.ParseDuration(median[i+1])
		if err != nil || d <= 0 {
			t.Fatalf("fdatasync figure %q: %v, want a positive duration", median[i+1], err)
		}
		lat[i] = d
	}
	if lat[0] > lat[1] || lat[1] > lat[2] {
		t.Errorf("median %v, p90 %v, slowest %v: not in order", lat[0], lat[1], lat[2])
	}
	rate := regexp.MustCompile(`fast-disk group of ([\d,]+) lines: ([\d,]+) lines/s`).FindStringSubmatch(out)
	if rate == nil || rate[1] == "0" || rate[2] == "0" {
		t.Fatalf("no positive fast-disk throughput:\n%s", out)
	}
	wear := regexp.MustCompile(`(?m)^\s+(1|10|100)\s+([\d,]+)\s+([\d,]+)\s+[\d.]+ MB\s+([\d.]+)x$`).FindAllStringSubmatch(out, -1)
	if len(wear) != 3 {
		t.Fatalf("want 3 wear rows (1, 10, 100 lines/s), got %d:\n%s", len(wear), out)
	}
	for _, w := range wear {
		if x, err := strconv.ParseFloat(w[4], 64); err != nil || x <= 0 {
			t.Errorf("%s lines/s: %q bytes per input byte, want a positive figure", w[1], w[4])
		}
	}
	left, err := os.ReadDir(root.path("spool"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("the queue directory keeps %s after the check", e.Name())
	}
}
