//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// receiver is a running edgesocket-receiver: the fake engine.
type receiver struct {
	t    *testing.T
	p    *proc
	port int
	out  string
}

// startReceiver runs the receiver on a port the kernel picks, writing
// envelopes to its own out file, and learns the port from the line the
// receiver prints once its socket is bound. extra holds mode and fault
// flags.
func startReceiver(t *testing.T, token string, extra ...string) *receiver {
	t.Helper()
	rc, err := launchReceiver(t, "127.0.0.1:0", token, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// startReceiverAt runs the receiver on a port fixed in advance: one an
// agent's config already names (held by holdPort until then, or left by
// a receiver that stopped). Another socket may take the port in the
// moment between its release and the receiver's bind, so a bind failure
// is retried, bounded in attempts and time.
func startReceiverAt(t *testing.T, port int, token string, extra ...string) *receiver {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	var rc *receiver
	var err error
	eventually(t, 10*time.Second, "the receiver bound to "+addr, func() bool {
		rc, err = launchReceiver(t, addr, token, extra...)
		return !errors.Is(err, errAddrInUse)
	})
	if err != nil {
		t.Fatalf("receiver on %s: %v", addr, err)
	}
	return rc
}

// errAddrInUse marks a start that failed because the port was taken.
var errAddrInUse = errors.New("address already in use")

// launchReceiver starts the receiver on addr and waits until it says it
// is listening (probing the port instead would briefly hold its single
// collector slot). It fails with errAddrInUse when the port was taken.
func launchReceiver(t *testing.T, addr, token string, extra ...string) (*receiver, error) {
	t.Helper()
	dir := t.TempDir()
	rc := &receiver{t: t, out: filepath.Join(dir, "received.ndjson")}
	args := append([]string{
		"--listen", addr,
		"--token", token,
		"--out", rc.out,
		"--format", "envelope",
		"--stats-interval", "5s",
	}, extra...)
	rc.p = startProc(t, "edgesocket-receiver", dir, []string{"PATH=" + os.Getenv("PATH")}, bins.receiver, args...)
	var bound string
	eventually(t, 10*time.Second, "receiver listening", func() bool {
		text := rc.p.stderrText()
		if m := listeningOn.FindStringSubmatch(text); m != nil {
			bound = m[1]
			return true
		}
		return !rc.p.running()
	})
	if bound == "" {
		rc.p.wait(t, 10*time.Second)
		text := rc.p.stderrText()
		if strings.Contains(text, "address already in use") {
			return nil, fmt.Errorf("%w: %s", errAddrInUse, text)
		}
		return nil, fmt.Errorf("receiver exited: %s", text)
	}
	_, portText, err := net.SplitHostPort(bound)
	if err != nil {
		return nil, fmt.Errorf("receiver's bound address %q: %w", bound, err)
	}
	if rc.port, err = strconv.Atoi(portText); err != nil {
		return nil, fmt.Errorf("receiver's bound address %q: %w", bound, err)
	}
	return rc, nil
}

// listeningOn is the receiver's line once its socket is bound.
var listeningOn = regexp.MustCompile(`listening on (\S+)`)

// stop ends the receiver gracefully so that its output is complete.
func (rc *receiver) stop() {
	rc.t.Helper()
	if rc.p.running() {
		rc.p.signal(rc.t, syscall.SIGTERM)
		rc.p.wait(rc.t, 10*time.Second)
	}
}

// received counts each payload text the receiver wrote.
func (rc *receiver) received() map[string]int {
	return payloadCounts(rc.out)
}

// payloadCounts reads a receiver output file and counts every event
// payload in it. It does not depend on the envelope's exact shape: it looks
// for the event objects inside each JSON line (objects with "_file" and
// "payload", alone or in a multiline array, possibly nested in an envelope
// or carried as a JSON string).
func payloadCounts(path string) map[string]int {
	counts := map[string]int{}
	b, err := os.ReadFile(path)
	if err != nil {
		return counts
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v any
		if json.Unmarshal(line, &v) != nil {
			continue // a line still being written
		}
		collectEvents(v, counts, 0)
	}
	return counts
}

func collectEvents(v any, counts map[string]int, depth int) {
	if depth > 6 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["_file"]; ok {
			if p, ok := x["payload"].(string); ok {
				counts[p]++
				return
			}
		}
		for _, inner := range x {
			collectEvents(inner, counts, depth+1)
		}
	case []any:
		for _, inner := range x {
			collectEvents(inner, counts, depth+1)
		}
	case string:
		if len(x) > 1 && (x[0] == '{' || x[0] == '[') {
			var inner any
			if json.Unmarshal([]byte(x), &inner) == nil {
				collectEvents(inner, counts, depth+1)
			}
		}
	}
}

// delivery compares what was received with what was written.
type delivery struct {
	missing    []string
	duplicates int // extra copies beyond the first
	foreign    int // payloads nobody wrote
}

func checkDelivery(want []string, got map[string]int) delivery {
	var d delivery
	wanted := make(map[string]bool, len(want))
	for _, w := range want {
		wanted[w] = true
		switch n := got[w]; {
		case n == 0:
			d.missing = append(d.missing, w)
		case n > 1:
			d.duplicates += n - 1
		}
	}
	for p := range got {
		if !wanted[p] {
			d.foreign++
		}
	}
	sort.Strings(d.missing)
	return d
}

func (d delivery) String() string {
	s := fmt.Sprintf("%d missing, %d duplicates, %d unexpected", len(d.missing), d.duplicates, d.foreign)
	if len(d.missing) > 0 {
		s += fmt.Sprintf(" (first missing: %q)", d.missing[0])
	}
	return s
}

// waitDelivered waits until every line in want was received at least once
// and returns the final comparison.
func (rc *receiver) waitDelivered(want []string, d time.Duration) delivery {
	rc.t.Helper()
	var last delivery
	deadline := time.Now().Add(d)
	for {
		last = checkDelivery(want, rc.received())
		if len(last.missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			rc.t.Fatalf("not delivered within %s: %s; receiver stderr: %s", d, last, tail(rc.p.stderr, 10))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last.foreign > 0 {
		rc.t.Errorf("receiver got %d payloads that were never written", last.foreign)
	}
	return last
}
