package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/edge-agent/edge-agent/connector/input"
)

// With neither fields nor add-host-fields the payload is exactly the Java
// agent's: these bytes are the contract with SeaTunnel jobs already parsing it.
func TestFieldsOffPayloadUnchanged(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.log", "hello\n")
	h.open()
	evs := pollEvents(t, h)
	if len(evs) != 1 {
		t.Fatalf("got %d events", len(evs))
	}
	file, _ := json.Marshal(h.path("a.log"))
	want := `{"_index":0,"_file":` + string(file) + `,"_line":1,"_offset":6,"_ts":` +
		strconv.FormatInt(h.clock.UnixMilli(), 10) + `,"payload":"hello"}`
	if got := string(evs[0].Payload); got != want {
		t.Fatalf("payload\n got %s\nwant %s", got, want)
	}
}

func TestFieldsAddedToEveryObject(t *testing.T) {
	cases := []struct {
		name      string
		multiline bool
		input     string
		want      []string // the tail of each event, after the payload value
	}{
		{"single lines", false, "a\nb\n", []string{
			`"payload":"a","app":"x\"y","env":"prod","_host":"h1","_agent_id":"agent-1"}`,
			`"payload":"b","app":"x\"y","env":"prod","_host":"h1","_agent_id":"agent-1"}`,
		}},
		{"multiline group", true, "start\n cont\nstart\n", []string{
			`"payload":"start","app":"x\"y","env":"prod","_host":"h1","_agent_id":"agent-1"},` +
				`{"_index":1`,
			`"payload":" cont","app":"x\"y","env":"prod","_host":"h1","_agent_id":"agent-1"}]`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.Fields = map[string]string{"env": "prod", "app": `x"y`}
				c.AddHostFields = true
				if tc.multiline {
					c.Multiline.Pattern = `^\s`
					c.Multiline.Negate = true
				}
			})
			h.settings = input.Settings{ID: "test", AgentID: "agent-1", Host: "h1"}
			h.write("a.log", tc.input)
			h.open()
			var all strings.Builder
			for _, ev := range pollEvents(t, h) {
				all.Write(ev.Payload)
				all.WriteByte('\n')
			}
			for _, w := range tc.want {
				if !strings.Contains(all.String(), w) {
					t.Errorf("events lack %s:\n%s", w, all.String())
				}
			}
		})
	}
}

func TestAddHostFieldsNeedsHost(t *testing.T) {
	c := NewDefaultConfig()
	c.Paths = []string{t.TempDir()}
	c.AddHostFields = true
	if _, err := New(c, input.Settings{ID: "x", AgentID: "a"}); !errors.Is(err, ErrNoHost) {
		t.Fatalf("got %v, want ErrNoHost", err)
	}
}

func TestLineFilters(t *testing.T) {
	cases := []struct {
		name      string
		include   []string
		exclude   []string
		multiline bool
		input     string
		want      []string
		filtered  int64
	}{
		{"none", nil, nil, false, "INFO a\nDEBUG b\n", []string{"INFO a", "DEBUG b"}, 0},
		{"include only", []string{`^(INFO|ERROR)`}, nil, false, "INFO a\nDEBUG b\nERROR c\n", []string{"INFO a", "ERROR c"}, 1},
		{"exclude only", nil, []string{`DEBUG`, `TRACE`}, false, "INFO a\nDEBUG b\nTRACE c\n", []string{"INFO a"}, 2},
		{"include then exclude", []string{`^(INFO|ERROR)`}, []string{`skip`}, false,
			"INFO a\nDEBUG b\nERROR c\nINFO skip me\n", []string{"INFO a", "ERROR c"}, 2},
		// After grouping, on the group's first line: a continuation line
		// mentioning DEBUG does not drop its group, a DEBUG group goes whole.
		{"multiline first line", nil, []string{`^DEBUG`}, true,
			"INFO a\n DEBUG inside\nDEBUG b\n x\nINFO c\n", []string{"INFO a", " DEBUG inside", "INFO c"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.IncludeLines, c.ExcludeLines = tc.include, tc.exclude
				if tc.multiline {
					c.Multiline.Pattern = `^\s`
					c.Multiline.Negate = true
				}
			})
			h.write("a.log", tc.input)
			h.open()
			got := texts(h.pollAll())
			got = append(got, texts(h.apply(h.in.Drain(nil)))...)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if n := h.in.Stats().Filtered; n != tc.filtered {
				t.Fatalf("Stats().Filtered = %d, want %d", n, tc.filtered)
			}
			// Dropped events still moved the position: nothing is read again.
			if again := texts(h.restart()); len(again) != 0 || len(texts(h.pollAll())) != 0 {
				t.Fatalf("read again after restart: %q", again)
			}
			if st := h.in.Stats(); st.LinesRead != 0 || st.Filtered != 0 {
				t.Fatalf("after restart: %d lines read again, %d filtered again", st.LinesRead, st.Filtered)
			}
		})
	}
}

func TestConfigRejectsFieldsAndFilters(t *testing.T) {
	cases := []struct {
		key    string
		mutate func(c *Config)
	}{
		{"fields.payload", func(c *Config) { c.Fields = map[string]string{"payload": "x"} }},
		{"fields._file", func(c *Config) { c.Fields = map[string]string{"_file": "x"} }},
		{"fields._host", func(c *Config) { c.Fields = map[string]string{"_host": "x"} }},
		{"fields", func(c *Config) { c.Fields = map[string]string{" ": "x"} }},
		{"include-lines[1]", func(c *Config) { c.IncludeLines = []string{"ok", "(["} }},
		{"exclude-lines[0]", func(c *Config) { c.ExcludeLines = []string{"a{2,1}"} }},
	}
	for _, tc := range cases {
		c := NewDefaultConfig()
		c.Paths = []string{"/var/log/*.log"}
		tc.mutate(c)
		err := c.Validate()
		var fe *input.FieldError
		if !errors.As(err, &fe) || fe.Key != tc.key {
			t.Errorf("%s: got %v", tc.key, err)
		}
	}
}

// pollEvents polls once with a large budget and applies the positions.
func pollEvents(t *testing.T, h *harness) []input.Event {
	t.Helper()
	evs, err := h.in.Poll(t.Context(), nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	h.apply(evs)
	var out []input.Event
	for _, ev := range evs {
		if ev.Payload != nil {
			out = append(out, ev)
		}
	}
	drained := h.in.Drain(nil)
	h.apply(drained)
	for _, ev := range drained {
		if ev.Payload != nil {
			out = append(out, ev)
		}
	}
	return out
}

func TestConfigOverlaps(t *testing.T) {
	cases := []struct {
		name string
		a, b []string
		want int
	}{
		{"same glob", []string{"/var/log/app/*.log"}, []string{"/var/log/app/*.log"}, 1},
		{"file under glob", []string{"/var/log/app/a.log"}, []string{"/var/log/app/*.log"}, 1},
		{"glob over file", []string{"/var/log/app/*.log"}, []string{"/var/log/app/a.log"}, 1},
		{"file under directory", []string{"/var/log/app/a.log"}, []string{"/var/log/app"}, 1},
		{"disjoint", []string{"/var/log/app/*.log"}, []string{"/var/log/db/*.log"}, 0},
		{"glob against glob undecided", []string{"/var/log/*/x.log"}, []string{"/var/log/app/*.log"}, 0},
	}
	for _, tc := range cases {
		a, b := NewDefaultConfig(), NewDefaultConfig()
		a.Paths, b.Paths = tc.a, tc.b
		if got := a.Overlaps(b); len(got) != tc.want {
			t.Errorf("%s: got %v, want %d overlaps", tc.name, got, tc.want)
		}
	}
}

// A file two inputs match is read by the earlier one only; the later one
// reads the rest of its paths.
func TestInputsShareFilesFirstWins(t *testing.T) {
	dir := t.TempDir()
	claims := input.NewClaims([]string{"first", "second"})
	open := func(id string, paths ...string) *harness {
		h := newHarness(t, func(c *Config) { c.Paths = paths })
		h.dir = dir
		h.settings = input.Settings{ID: id, Claims: claims}
		return h
	}
	first := open("first", filepath.Join(dir, "app-*.log"))
	second := open("second", filepath.Join(dir, "*.log"))
	var logs bytes.Buffer
	second.log = slog.New(slog.NewTextHandler(&logs, nil))
	first.write("app-1.log", "a\n")
	second.write("db.log", "b\n")
	first.open()
	second.open()
	if got := texts(first.pollAll()); strings.Join(got, ",") != "a" {
		t.Fatalf("first read %q", got)
	}
	if got := texts(second.pollAll()); strings.Join(got, ",") != "b" {
		t.Fatalf("second read %q, want only db.log's line", got)
	}
	second.write("app-1.log", "a2\n") // rescans see it again: still one line logged
	first.pollAll()
	second.pollAll()
	if n := strings.Count(logs.String(), "matched by an earlier input"); n != 1 {
		t.Fatalf("skipped file logged %d times, want once:\n%s", n, logs.String())
	}
	// Once the first input is gone, the file is the second's.
	if err := first.in.Close(); err != nil {
		t.Fatal(err)
	}
	if got := texts(second.pollAll()); strings.Join(got, ",") != "a,a2" {
		t.Fatalf("second read %q after the first closed", got)
	}
}

// FuzzExtraFields: whatever names and values pass Validate, the event
// object stays valid JSON and carries each field as configured.
func FuzzExtraFields(f *testing.F) {
	f.Add("env", "prod", "h1", true)
	f.Add("a\"b", "line\nbreak\x00", "", false)
	f.Add("ü", "\xff\xfe", "host", true)
	f.Fuzz(func(t *testing.T, k, v, host string, hostFields bool) {
		fields := map[string]string{k: v, "z": v}
		if len(validateFields(fields)) > 0 {
			return
		}
		obj := append([]byte(`{"payload":"x"`), extraFields(fields, hostFields, host, "agent")...)
		obj = append(obj, '}')
		var got map[string]string
		if err := json.Unmarshal(obj, &got); err != nil {
			t.Fatalf("%q: %v", obj, err)
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) || !utf8.ValidString(host) {
			return // replaced by U+FFFD, as in payloads
		}
		if got[k] != v || (hostFields && (got["_host"] != host || got["_agent_id"] != "agent")) {
			t.Fatalf("%q decoded to %v", obj, got)
		}
	})
}
