package top

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/output"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// fakeAgent is the agent behind a real API handler: the test sets what
// its Snapshot returns.
type fakeAgent struct {
	mu sync.Mutex
	st agent.Status
}

func (f *fakeAgent) Snapshot() agent.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeAgent) set(fn func(*agent.Status)) {
	f.mu.Lock()
	fn(&f.st)
	f.mu.Unlock()
}

// clock is the time the test says it is.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

const testToken = "top-test-token"

// serveAPI runs the agent's own API handler over fa on loopback, with a
// token, and returns a client configured as `edge-agent top` builds it.
func serveAPI(t *testing.T, fa *fakeAgent, clk *clock) *api.Client {
	t.Helper()
	srv := httptest.NewServer(api.Handler(api.Options{
		Settings: api.Settings{Listen: "127.0.0.1:0", Token: testToken},
		Source:   fa, Version: "v9.8.7", Now: clk.Now,
	}))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Settings{Listen: srv.Listener.Addr().String(), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func runningAgent() agent.Status {
	return agent.Status{
		AgentID: "agent-0123456789abcdef", State: "running", StartedAt: t0.Add(-3723 * time.Second), LastTurn: t0,
		Connection: "connected", EventsRead: 1000, Sent: 900, Acked: 800, Reconnects: 2, Dropped: 3,
		SendLatency: agent.Histogram{Count: 10, Sum: 50 * time.Millisecond},
		Queue:       agent.QueueStatus{Pending: 120, Sending: 64, Dead: 5, SizeBytes: 3 << 20, FileBytes: 16 << 20, OldestPendingAge: 75 * time.Second},
		Input:       &component.Description{Values: figures(0, 10<<20)},
		Inputs: []agent.InputStatus{
			{ID: "app", Type: "file", Description: component.Description{Values: figures(700, 7<<20),
				Files: []component.FileStatus{
					{Path: "/var/log/app/a.log", Identity: "1:10", Offset: 1000, Size: 1000, Open: true},
					{Path: "/var/log/app/b.log", Identity: "1:11", Offset: 5000, Size: 9000, Lag: 4000, Open: false},
				}}},
			{ID: "web", Type: "file", Description: component.Description{Values: figures(300, 3<<20),
				Files: []component.FileStatus{
					{Path: "/var/log/web/access.log", Identity: "1:12", Offset: 2000, Size: 2500, Lag: 500, Open: true},
				}}},
		},
	}
}

// figures are the two figures the view takes rates of, as an input
// describes them.
func figures(events, bytes int64) []component.Value {
	return []component.Value{{Key: input.KeyEvents, N: events}, {Key: input.KeyBytesRead, N: bytes}}
}

// add adds n to the figure under key.
func add(d *component.Description, key string, n int64) {
	for i := range d.Values {
		if d.Values[i].Key == key {
			d.Values[i].N += n
		}
	}
}

// withFiles fills Status.Files from the inputs, as the agent does.
func withFiles(st *agent.Status) {
	st.Files = nil
	for _, in := range st.Inputs {
		st.Files = append(st.Files, in.Files...)
	}
}

// step delivers what a command produces to the model, as the bubbletea
// runtime would; a tick is answered by the reading it asks for.
func step(t *testing.T, m tea.Model, cmd tea.Cmd) tea.Model {
	t.Helper()
	if cmd == nil {
		t.Fatal("no command to run")
	}
	m, _ = m.Update(cmd())
	return m
}

// refresh is one interval passing: the tick, then the reading.
func refresh(t *testing.T, m tea.Model, clk *clock) tea.Model {
	t.Helper()
	clk.advance(time.Second)
	m, cmd := m.Update(tickMsg{})
	return step(t, m, cmd)
}

func key(m tea.Model, k string) (tea.Model, tea.Cmd) {
	return m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
}

// newView starts a model on the fake agent and takes its first reading.
func newView(t *testing.T, fa *fakeAgent, clk *clock) tea.Model {
	t.Helper()
	c := serveAPI(t, fa, clk)
	m := New(context.Background(), Options{Source: c, Now: clk.Now}, nil)
	return step(t, m, m.Init())
}

func TestViewShowsTheAPIsFiguresAndRates(t *testing.T) {
	clk := &clock{now: t0}
	st := runningAgent()
	withFiles(&st)
	st.LastError, st.LastErrorAt = "dial tcp 127.0.0.1:9999: connection refused", t0.Add(-40*time.Second)
	fa := &fakeAgent{st: st}
	m := newView(t, fa, clk)

	first := m.View()
	for _, want := range []string{
		"edge-agent v9.8.7  running  up 1h02m", "health  ok", "output  connected  out - ev/s",
		"last error (40s ago): dial tcp 127.0.0.1:9999: connection refused",
		"pending 120  sending 64  received 0  dead 5  bytes 3.0 MiB  oldest 1m15s",
		"file 16.0 MiB  dropped 3", "backpressure off",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("first frame lacks %q:\n%s", want, first)
		}
	}

	fa.set(func(s *agent.Status) {
		s.EventsRead += 500
		s.Sent += 450
		s.Acked += 400
		s.SendLatency = agent.Histogram{Count: 20, Sum: 80 * time.Millisecond}
		add(s.Input, input.KeyBytesRead, 1<<20)
		add(&s.Inputs[0].Description, input.KeyEvents, 300)
		s.Inputs[0].Files[1].Offset += 2048
		s.Inputs[0].Files[1].Lag -= 2048
		s.Backpressure = true
		withFiles(s)
	})
	m = refresh(t, m, clk)
	got := m.View()
	for _, want := range []string{
		"out 400 ev/s", "sent 450/s", "send 3ms", "input   in 500 ev/s  1.0 MiB/s  files 2 open of 3",
		"backpressure ON", "up 1h02m",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("second frame lacks %q:\n%s", want, got)
		}
	}
	if line := lineWith(got, "b.log"); !strings.Contains(line, "2.0 KiB") || !strings.HasPrefix(line, "-") {
		t.Errorf("b.log (closed, read 2 KiB in 1s): %q", line)
	}
	if line := lineWith(got, " app "); !strings.Contains(line, "300") || !strings.Contains(line, "1/2") {
		t.Errorf("input app row: %q", line)
	}
}

func TestViewShowsUnhealthyComponents(t *testing.T) {
	clk := &clock{now: t0}
	st := runningAgent()
	st.Connection, st.LastError = "auth_failed", "AUTH_FAILED"
	m := newView(t, &fakeAgent{st: st}, clk)
	got := m.View()
	for _, want := range []string{
		"health  UNHEALTHY  input running, output AUTH_FAILED, wal writable\n",
		"\n        reason: engine refused the agent (auth_failed): AUTH_FAILED\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
}

func TestKeys(t *testing.T) {
	// The order of the three files in the list, by the key pressed.
	cases := []struct {
		name  string
		keys  string
		files []string
	}{
		{"by lag", "", []string{"b.log", "access.log", "a.log"}},
		{"s: by rate", "s", []string{"access.log", "a.log", "b.log"}},
		{"ss: by path", "ss", []string{"a.log", "b.log", "access.log"}},
		{"sss: by lag again", "sss", []string{"b.log", "access.log", "a.log"}},
		{"i: input app", "i", []string{"b.log", "a.log"}},
		{"ii: input web", "ii", []string{"access.log"}},
		{"iii: all", "iii", []string{"b.log", "access.log", "a.log"}},
		{"f is i", "f", []string{"b.log", "a.log"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := &clock{now: t0}
			st := runningAgent()
			withFiles(&st)
			fa := &fakeAgent{st: st}
			m := newView(t, fa, clk)
			fa.set(func(s *agent.Status) {
				s.Inputs[1].Files[0].Offset += 300 // access.log reads fastest
				s.Inputs[0].Files[0].Offset += 100
				withFiles(s)
			})
			m = refresh(t, m, clk)
			for _, k := range c.keys {
				m, _ = key(m, string(k))
			}
			if got := fileOrder(m.View()); strings.Join(got, " ") != strings.Join(c.files, " ") {
				t.Errorf("files %q, want %q\n%s", got, c.files, m.View())
			}
		})
	}
}

func TestPauseFreezesTheView(t *testing.T) {
	clk := &clock{now: t0}
	fa := &fakeAgent{st: runningAgent()}
	m := newView(t, fa, clk)
	m, _ = key(m, "p")
	fa.set(func(s *agent.Status) { s.Queue.Pending = 999 })
	m = refresh(t, m, clk)
	if got := m.View(); !strings.Contains(got, "pending 120 ") || !strings.Contains(got, "[PAUSED]") || !strings.Contains(got, "p resume") {
		t.Errorf("paused view moved on:\n%s", got)
	}
	m, _ = key(m, " ")
	if got := m.View(); !strings.Contains(got, "pending 999 ") || strings.Contains(got, "PAUSED") {
		t.Errorf("resumed view does not show the last reading:\n%s", got)
	}
}

func TestQuitKeys(t *testing.T) {
	for _, k := range []tea.KeyMsg{
		{Type: tea.KeyRunes, Runes: []rune("q")},
		{Type: tea.KeyCtrlC},
		{Type: tea.KeyEsc},
	} {
		m := New(context.Background(), Options{Source: failing{}}, nil)
		_, cmd := m.Update(k)
		if cmd == nil {
			t.Fatalf("%s: no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s does not quit", k)
		}
	}
	m := New(context.Background(), Options{Source: failing{}}, nil)
	if _, cmd := key(m, "x"); cmd != nil {
		t.Error("an unbound key does something")
	}
}

type failing struct{}

func (failing) Status(context.Context) (api.Status, error) {
	return api.Status{}, errors.New("connection refused")
}

func TestAgentGoneKeepsTheLastAnswer(t *testing.T) {
	clk := &clock{now: t0}
	fa := &fakeAgent{st: runningAgent()}
	srv := httptest.NewServer(api.Handler(api.Options{FileToken: testToken, Source: fa, Now: clk.Now}))
	c, err := api.NewClient(api.Settings{Listen: srv.Listener.Addr().String(), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	m := tea.Model(New(context.Background(), Options{Source: c, Now: clk.Now}, nil))
	m = step(t, m, m.Init())
	srv.Close()
	m = refresh(t, m, clk)
	got := m.View()
	if !strings.Contains(got, "pending 120 ") || !strings.Contains(got, "cannot read the agent (showing the last answer)") {
		t.Errorf("after the agent went away:\n%s", got)
	}

	m = New(context.Background(), Options{Source: failing{}}, nil)
	m = step(t, m, m.Init())
	if got := m.View(); !strings.Contains(got, "cannot read the agent: connection refused") {
		t.Errorf("without any answer:\n%s", got)
	}
}

// An 80×24 terminal shows every summary line and as many files as fit,
// with a count of the rest; no line is wider than the terminal.
func TestViewFitsTheTerminal(t *testing.T) {
	for _, size := range []struct {
		w, h  int
		files bool // tall enough for some of the files
	}{{80, 24, true}, {120, 40, true}, {60, 15, false}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			clk := &clock{now: t0}
			st := runningAgent()
			st.LastError, st.LastErrorAt = strings.Repeat("a long error ", 20), t0
			for i := range 200 {
				st.Inputs[0].Files = append(st.Inputs[0].Files, component.FileStatus{
					Path: fmt.Sprintf("/var/log/some/very/deep/directory/tree/of/applications/app-%03d.log", i), Offset: int64(i), Size: 1000, Lag: 1000 - int64(i)})
			}
			withFiles(&st)
			m := newView(t, &fakeAgent{st: st}, clk)
			m, _ = m.Update(tea.WindowSizeMsg{Width: size.w, Height: size.h})
			got := m.View()
			lines := strings.Split(got, "\n")
			if len(lines) > size.h {
				t.Errorf("%d lines for a %d-line terminal:\n%s", len(lines), size.h, got)
			}
			for _, l := range lines {
				if n := len([]rune(l)); n > size.w {
					t.Errorf("line of %d columns: %q", n, l)
				}
			}
			for _, want := range []string{"health", "output", "wal", "input", "FILES (203", "q quit"} {
				if !strings.Contains(got, want) {
					t.Errorf("lacks %q:\n%s", want, got)
				}
			}
			if !size.files {
				return
			}
			// The file with most lag comes first and keeps its name; a
			// count stands for those that do not fit.
			if !strings.Contains(got, "more") || !strings.Contains(got, "app-000.log") {
				t.Errorf("the file with most lag is not shown:\n%s", got)
			}
		})
	}
}

func lineWith(frame, s string) string {
	for _, l := range strings.Split(frame, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// fileOrder is the base names of the file list, top to bottom.
func fileOrder(frame string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(frame, "\n") {
		switch {
		case strings.HasPrefix(l, "PATH"):
			in = true
		case in && strings.Contains(l, ".log"):
			f := strings.Fields(strings.TrimPrefix(l, "-"))[0]
			out = append(out, f[strings.LastIndex(f, "/")+1:])
		}
	}
	return out
}

// The token is required: the view reads through the same client status
// uses, so a client without it gets the agent's 401 as its error.
func TestTokenIsSent(t *testing.T) {
	clk := &clock{now: t0}
	srv := httptest.NewServer(api.Handler(api.Options{Settings: api.Settings{Token: testToken}, Source: &fakeAgent{st: runningAgent()}, Now: clk.Now}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c, err := api.NewClient(api.Settings{Listen: "127.0.0.1:" + port})
	if err != nil {
		t.Fatal(err)
	}
	m := tea.Model(New(context.Background(), Options{Source: c, Now: clk.Now}, nil))
	m = step(t, m, m.Init())
	if got := m.View(); !strings.Contains(got, "unauthorized") {
		t.Errorf("without the token:\n%s", got)
	}
}

// The congestion window and, with output.rate-limit set, the cap, the
// time throttled and the backlog's ETA at the cap show on the output's
// lines; without a cap there is no cap line and no window is a dash.
func TestViewShowsWindowAndRateCap(t *testing.T) {
	clk := &clock{now: t0}
	st := runningAgent()
	st.Window = 256
	st.SendThrottled = 90 * time.Second
	st.RateLimit = agent.RateLimitStatus{RateLimit: output.RateLimit{EventsPerSecond: 100, BytesPerSecond: 64 << 10},
		EventBurst: 100, ByteBurst: 64 << 10, BacklogETA: 125 * time.Second}
	got := newView(t, &fakeAgent{st: st}, clk).View()
	for _, want := range []string{"window 256", "rate cap 100 ev/s, 64.0 KiB/s  throttled 1m30s  backlog ETA 2m05s"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}

	plain := runningAgent()
	got = newView(t, &fakeAgent{st: plain}, clk).View()
	if !strings.Contains(got, "window -") || strings.Contains(got, "rate cap") {
		t.Errorf("without a window or a cap:\n%s", got)
	}
}

// Each endpoint of output.endpoints has a line under the output's: the
// active ones marked, its state and what it received.
func TestViewShowsEndpoints(t *testing.T) {
	clk := &clock{now: t0}
	st := runningAgent()
	st.Endpoints = []output.EndpointStatus{{Endpoint: "a:1", State: "unavailable"}, {Endpoint: "b:2", State: "connected", Active: true, Received: 42}}
	got := newView(t, &fakeAgent{st: st}, clk).View()
	for _, want := range []string{"  a:1  unavailable  in - ev/s  received 0", "* b:2  connected  in - ev/s  received 42"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
}

// Inputs that read no files get their own summary under their row, and
// "-" for files and lag; with no input reading files the summary has no
// files and the file list is gone. The types are unknown to the view: it
// shows what they described, and of their lines only the brief ones.
func TestViewShowsEachInputsOwnSummary(t *testing.T) {
	nonFile := []agent.InputStatus{
		{ID: "journal", Type: "sensor", Description: component.Description{Values: figures(1234, 1<<20),
			Summary: "1234 readings, cursor s=0123456789abcdef;i=4d2"}},
		{ID: "sys", Type: "listener", Description: component.Description{Values: figures(500, 0),
			Summary: "2 connections open (7 accepted, 1 refused)",
			Lines: []component.Line{{Label: "processor", Text: "[0] drop in 10 out 7 dropped 3", Brief: true},
				{Label: "collector", Text: "web-01 in detail"}}}},
		{ID: "mute", Type: "other"},
	}
	cases := []struct {
		name         string
		inputs       []agent.InputStatus
		want, absent []string
	}{
		{"no input reads files", nonFile, []string{
			"  1234 readings, cursor s=0123456789abcdef;i=4d2",
			"  2 connections open (7 accepted, 1 refused)",
			"input   in 200 ev/s",
			"  [0] drop in 10 out 7 dropped 3",
		}, []string{"FILES (", "files 0 open", "web-01 in detail"}},
		{"with one reading files", append([]agent.InputStatus{runningAgent().Inputs[0]}, nonFile[1]), []string{
			"  2 connections open", "FILES (", "files ",
		}, []string{"  1234 readings"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{now: t0}
			st := runningAgent()
			st.Inputs = tc.inputs
			withFiles(&st)
			fa := &fakeAgent{st: st}
			m := newView(t, fa, clk)
			fa.set(func(s *agent.Status) {
				s.EventsRead += 200
				for i := range s.Inputs {
					if s.Inputs[i].ID == "sys" {
						s.Inputs[i].Values = figures(650, 0)
					}
				}
			})
			m = refresh(t, m, clk)
			got := m.View()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("view lacks %q:\n%s", w, got)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("view has %q:\n%s", a, got)
				}
			}
			if row := strings.Fields(lineWith(got, " sys ")); len(row) != 7 || row[2] != "-" || row[3] != "150" || row[6] != "-" {
				t.Errorf("listener row (files -, 150 ev/s, lag -): %q", row)
			}
		})
	}
}

// Each lane's backlog has its place under the WAL's figures; without
// lanes the line is absent.
func TestViewShowsLanes(t *testing.T) {
	clk := &clock{now: t0}
	st := runningAgent()
	st.Queue.Lanes = []agent.LaneStatus{{Name: "alarm", Rows: 3, Bytes: 300, OldestAge: 2 * time.Second}, {Name: "default", Rows: 40, Bytes: 4000, OldestAge: 90 * time.Second}}
	got := newView(t, &fakeAgent{st: st}, clk).View()
	if want := "lanes   alarm 3, 300 B (oldest 2s)  default 40, 3.9 KiB (oldest 1m30s)"; !strings.Contains(got, want) {
		t.Errorf("want %q in:\n%s", want, got)
	}
	got = newView(t, &fakeAgent{st: runningAgent()}, clk).View()
	if strings.Contains(got, "lanes") {
		t.Errorf("lanes shown without lanes:\n%s", got)
	}
}
