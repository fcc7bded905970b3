//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two inputs in one agent: each file's multiline groups come out by its
// own rule, fields appear only on the input that sets them (the other's
// events keep exactly the Java agent's keys), dropped lines are counted on
// /metrics per input, and a reload that widens one input's paths and adds
// a third keeps every position (nothing lost, nothing sent twice) and
// leaves the unchanged input running; removing the third stops its reading.
func TestInputsList(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	root := newRoot(t, options{port: port, api: true})
	inputsYAML := func(plainGlob string, extra bool) string {
		s := fmt.Sprintf(`inputs:
  - id: app
    paths: [%q]
    read-from-beginning: true
    glob-scan-interval-ms: 200
    multiline: {pattern: '^\s', negate: true, match: after, flush-idle-timeout-ms: 200}
    fields: {app: shop}
    add-host-fields: true
    exclude-lines: ['^DEBUG']
  - id: plain
    paths: [%q]
    read-from-beginning: true
    glob-scan-interval-ms: 200
`, root.path("in/app.log"), root.path(plainGlob))
		if extra {
			// A new input's first start: read-from-beginning decides
			// for the files already there.
			s += fmt.Sprintf("  - id: extra\n    paths: [%q]\n    read-from-beginning: true\n    glob-scan-interval-ms: 200\n", root.path("in/extra.log"))
		}
		return s
	}
	root.opts.inputs = inputsYAML("in/plain.log", false)
	root.writeConfig()

	app := root.createFile("in/app.log")
	plain := root.createFile("in/plain.log")
	// app.log: groups of a head line and indented continuation lines, and
	// DEBUG groups the filter drops. plain.log: indented lines are events
	// of their own (no multiline there).
	var appWant []string
	var appGroups [][]string
	for i := range 50 {
		g := []string{fmt.Sprintf("E%d start", i), fmt.Sprintf("  at %d.1", i), fmt.Sprintf("  at %d.2", i)}
		appGroups = append(appGroups, g)
		appWant = append(appWant, g...)
		app.lines(g)
		app.lines([]string{fmt.Sprintf("DEBUG %d", i), fmt.Sprintf("  debug detail %d", i)})
	}
	plainWant := makeLines(t.Name()+"-plain", 0, 200)
	for i := range plainWant {
		if i%2 == 1 {
			plainWant[i] = "  " + plainWant[i]
		}
	}
	plain.lines(plainWant)

	agent := root.startReady()
	want := append(slices.Clone(appWant), plainWant...)
	if d := rc.waitDelivered(want, deliverTimeout); d.duplicates != 0 || d.foreign != 0 {
		t.Fatalf("first delivery: %s", d)
	}
	groups := receivedGroups(t, rc.out)
	host, _ := os.Hostname()
	for _, g := range groups {
		first := g[0]
		file, _ := first["_file"].(string)
		switch {
		case strings.HasSuffix(file, "app.log"):
			if len(g) != 3 || g[1]["payload"] != "  at "+strings.TrimSuffix(strings.TrimPrefix(first["payload"].(string), "E"), " start")+".1" {
				t.Fatalf("app.log group %v, want a head line and its two continuation lines", payloads(g))
			}
			for _, o := range g {
				if o["app"] != "shop" || o["_host"] != host || o["_agent_id"] == "" || o["_agent_id"] == nil {
					t.Fatalf("app.log event without its fields: %v", o)
				}
			}
		case strings.HasSuffix(file, "plain.log"):
			if len(g) != 1 {
				t.Fatalf("plain.log lines grouped: %v", payloads(g))
			}
			keys := make([]string, 0, len(first))
			for k := range first {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if strings.Join(keys, ",") != "_file,_index,_line,_offset,_ts,payload" {
				t.Fatalf("plain.log event has keys %v, want only the Java agent's", keys)
			}
		default:
			t.Fatalf("event of an unexpected file %q", file)
		}
	}
	if n := len(groups); n != len(appGroups)+len(plainWant) {
		t.Fatalf("%d events, want %d app groups and %d plain lines", n, len(appGroups), len(plainWant))
	}
	eventually(t, 10*time.Second, "the 50 dropped DEBUG groups on /metrics", func() bool {
		return filteredMetric(t, root.apiBase(), "app") == 50 && filteredMetric(t, root.apiBase(), "plain") == 0
	})

	// Reload: plain's paths widen to plain*.log, a third input appears.
	plain2 := root.createFile("in/plain2.log")
	extra := root.createFile("in/extra.log")
	more := makeLines(t.Name()+"-plain2", 0, 100)
	plain2.lines(more)
	extraLines := makeLines(t.Name()+"-extra", 0, 100)
	extra.lines(extraLines)
	root.opts.inputs = inputsYAML("in/plain*.log", true)
	root.writeConfig()
	if stdout, stderr, code := root.cli("reload"); code != 0 {
		t.Fatalf("reload exit %d: %s %s", code, stdout, stderr)
	}
	eventually(t, 10*time.Second, `"config reloaded" naming the inputs section`, func() bool {
		return regexp.MustCompile(`"msg":"config reloaded","config_hash":"[0-9a-f]{64}","changed":\["inputs"\]`).MatchString(root.logText())
	})
	plainMore := makeLines(t.Name()+"-plain", 200, 100)
	plain.lines(plainMore)
	appMore := []string{"E50 start", "  at 50.1", "  at 50.2"}
	app.lines(appMore)
	want = append(append(append(append(want, more...), extraLines...), plainMore...), appMore...)
	if d := rc.waitDelivered(want, deliverTimeout); d.duplicates != 0 || d.foreign != 0 {
		t.Fatalf("after the reload: %s", d)
	}
	// app's entry did not change: it kept running, never reopened its file.
	if n := strings.Count(root.logText(), `"msg":"file opened","input_id":"app"`); n != 1 {
		t.Fatalf("app.log opened %d times, want once (the reload must leave app untouched)", n)
	}

	// Reload again without extra: it stops, the others go on.
	root.opts.inputs = inputsYAML("in/plain*.log", false)
	root.writeConfig()
	if stdout, stderr, code := root.cli("reload"); code != 0 {
		t.Fatalf("second reload exit %d: %s %s", code, stdout, stderr)
	}
	eventually(t, 10*time.Second, "the second reload applied", func() bool {
		return strings.Count(root.logText(), `"msg":"config reloaded"`) == 2
	})
	extra.lines(makeLines(t.Name()+"-extra", 100, 50)) // no input reads extra.log now
	last := makeLines(t.Name()+"-plain", 300, 50)
	plain.lines(last)
	want = append(want, last...)
	if d := rc.waitDelivered(want, deliverTimeout); d.duplicates != 0 || d.foreign != 0 {
		t.Fatalf("after removing an input: %s", d)
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
}

// receivedGroups returns every event the receiver wrote as its objects
// (one for a line, several for a multiline group).
func receivedGroups(t *testing.T, path string) [][]map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var env struct {
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(sc.Bytes(), &env) != nil || len(env.Payload) == 0 {
			continue
		}
		raw := env.Payload
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = []byte(s) // the event JSON carried as a string
		}
		var group []map[string]any
		if raw[0] == '[' {
			if err := json.Unmarshal(raw, &group); err != nil {
				t.Fatalf("event %s: %v", raw, err)
			}
		} else {
			var o map[string]any
			if err := json.Unmarshal(raw, &o); err != nil {
				t.Fatalf("event %s: %v", raw, err)
			}
			group = []map[string]any{o}
		}
		out = append(out, group)
	}
	return out
}

func payloads(g []map[string]any) []any {
	out := make([]any, len(g))
	for i, o := range g {
		out[i] = o["payload"]
	}
	return out
}

// filteredMetric reads edge_agent_input_events_filtered_total for input
// id; -1 when the series is missing.
func filteredMetric(t *testing.T, base, id string) float64 {
	t.Helper()
	code, body := httpGet(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	m := regexp.MustCompile(`(?m)^edge_agent_input_events_filtered_total\{input="` + regexp.QuoteMeta(id) + `"\} (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
