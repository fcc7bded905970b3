//go:build unix

package e2e

import (
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A running agent takes a changed config without a restart: edge-agent
// reload makes it ship a newly matched file while the file it already
// read goes on at its offset, nothing lost or sent twice; an invalid file
// is rejected with its line:column and the agent runs on; SIGHUP never
// stops it; reload exits 3 once it is gone.
func TestReload(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	root := newRoot(t, options{port: port, paths: []string{"in/a.log"}})
	a := root.createFile("in/a.log")
	b := root.createFile("in/b.log")
	wantA := makeLines(t.Name()+"-a", 0, 1000)
	wantB := makeLines(t.Name()+"-b", 0, 500)
	a.lines(wantA)
	b.lines(wantB)

	agent := root.startReady()
	if d := rc.waitDelivered(wantA, deliverTimeout); d.duplicates != 0 {
		t.Fatalf("before the reload: %s", d)
	}
	if got := rc.received(); got[wantB[0]] != 0 {
		t.Fatal("b.log shipped before the config matched it")
	}

	// Valid change through the command: in/*.log now matches b.log too.
	root.opts.paths = []string{"in/*.log"}
	root.writeConfig()
	stdout, stderr, code := root.cli("reload")
	if code != 0 {
		t.Fatalf("reload exit %d: %s %s", code, stdout, stderr)
	}
	more := makeLines(t.Name()+"-a", 1000, 500)
	a.lines(more)
	all := append(append(append([]string{}, wantA...), more...), wantB...)
	if d := rc.waitDelivered(all, deliverTimeout); d.duplicates != 0 {
		t.Fatalf("after the reload: %s", d)
	}
	eventually(t, 10*time.Second, `"config reloaded" with the hash and the input section`, func() bool {
		return regexp.MustCompile(`"msg":"config reloaded","config_hash":"[0-9a-f]{64}","changed":\["input"\]`).MatchString(root.logText())
	})

	// Invalid file: rejected with line:column, the old config keeps running.
	root.opts.extra = "  no-such-key: 1\n" // under log:
	root.writeConfig()
	agent.signal(t, syscall.SIGHUP)
	eventually(t, 10*time.Second, "the rejected reload logged at ERROR with line:column", func() bool {
		for _, line := range strings.Split(root.logText(), "\n") {
			if strings.Contains(line, `"level":"ERROR"`) && strings.Contains(line, "config reload rejected") &&
				regexp.MustCompile(`agent\.yaml:\d+:\d+`).MatchString(line) && strings.Contains(line, "no-such-key") {
				return true
			}
		}
		return false
	})
	if !agent.running() {
		t.Fatal("SIGHUP with an invalid config stopped the agent")
	}
	// Not even YAML: one ERROR line with the position, not a bare
	// "invalid configuration" and a message without it.
	root.opts.extra = "  level: [debug\n"
	root.writeConfig()
	before := strings.Count(root.logText(), "config reload rejected")
	agent.signal(t, syscall.SIGHUP)
	eventually(t, 10*time.Second, "the YAML error logged with its line:column", func() bool {
		return strings.Count(root.logText(), "config reload rejected") > before
	})
	for _, line := range strings.Split(root.logText(), "\n") {
		if strings.Contains(line, "config reload rejected") && strings.Contains(line, "invalid YAML") &&
			!regexp.MustCompile(`agent\.yaml:\d+:\d+: invalid YAML`).MatchString(line) {
			t.Fatalf("YAML error logged without its position: %s", line)
		}
		if strings.Contains(line, "config reload rejected") && strings.Contains(line, `"error":"invalid configuration"`) {
			t.Fatalf("a bare sentinel logged as a problem: %s", line)
		}
	}
	last := makeLines(t.Name()+"-b", 500, 200)
	b.lines(last)
	all = append(all, last...)
	if d := rc.waitDelivered(all, deliverTimeout); d.duplicates != 0 {
		t.Fatalf("after the rejected reload: %s", d)
	}

	// A key only a restart applies: logged at WARN, the running WAL kept.
	root.opts.extra = ""
	root.opts.queuePath = "data/other.db"
	root.writeConfig()
	agent.signal(t, syscall.SIGHUP)
	eventually(t, 10*time.Second, "queue.path reported as needing a restart", func() bool {
		return regexp.MustCompile(`"level":"WARN","msg":"config reload: this key only changes at a restart; the running value is kept","key":"queue.path"`).MatchString(root.logText())
	})
	final := makeLines(t.Name()+"-a", 1500, 100)
	a.lines(final)
	all = append(all, final...)
	if d := rc.waitDelivered(all, deliverTimeout); d.duplicates != 0 {
		t.Fatalf("after a reload that needs a restart: %s", d)
	}
	if _, err := os.Stat(root.path("data/other.db")); !os.IsNotExist(err) {
		t.Fatalf("the new queue.path was opened without a restart: %v", err)
	}

	if code := root.stop(agent); code != 0 {
		t.Fatalf("graceful stop after reloads: exit %d", code)
	}
	if _, _, code := root.cli("reload"); code != 3 {
		t.Fatalf("reload with no agent running: exit %d, want 3", code)
	}
}
