package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/starter/internal/agent"
)

func hasFigure(in Input, key string, want int64) bool {
	n, ok := in.Value(key)
	return ok && n == want
}

// sensor is the description of an input type the api has never heard of:
// what it renders comes from the description alone.
func sensor(readings, conns int64, probe string) component.Description {
	return component.Description{
		Values: []component.Value{
			{Key: "readings", N: readings, Metric: "sensor_readings_total", Help: "Readings taken."},
			{Key: "bytes_read", N: 10 * readings, Metric: "bytes_read_total", Total: true, Help: "Raw bytes the input read."},
			{Key: "probes_open", N: conns, OmitZero: true, Kind: component.Gauge, Metric: "sensor_probes_open", Help: "Probes open."},
			{N: 4, Metric: "sensor_faults_total", Labels: []component.Label{{Name: "probe", Value: probe}}, Help: "Faults per probe."},
		},
		Texts:   []component.Text{{Key: "firmware", Value: "v7"}, {Key: "empty", Value: ""}},
		Summary: "a line for people",
		Lines:   []component.Line{{Label: "probe", Text: probe + " ok"}},
		Records: []component.Record{{Key: "probes", Value: []map[string]string{{"name": probe}}}},
	}
}

// Several inputs: /debug/status lists each with what it described, under
// its own keys; /metrics exports each figure with a metric under the
// input's id, and the Total ones once, summed.
func TestInputsRenderedFromTheirDescriptions(t *testing.T) {
	st := running()
	files := component.Description{
		Values: []component.Value{{Key: "events_filtered", N: 3, Metric: "input_events_filtered_total", Help: "Filtered."}},
		Files:  []component.FileStatus{{Path: "/var/log/app.log", Identity: "1:3:cd", Offset: 4, Size: 4}},
	}
	st.Inputs = []agent.InputStatus{
		{ID: "app", Type: "tail", Description: files},
		{ID: "idle", Type: "tail", Description: component.Description{Files: []component.FileStatus{}}},
		{ID: "quiet", Type: "other"}, // describes nothing: no series, no figures
		{ID: "s1", Type: "sensor", Description: sensor(5, 0, "p1")},
		{ID: "s2", Type: "sensor", Description: sensor(6, 2, "p2")},
	}
	var ds []component.Description
	for _, in := range st.Inputs {
		ds = append(ds, in.Description)
	}
	sum := component.Sum(ds...)
	st.Input = &sum
	srv := serve(t, Options{Source: &fakeSource{st: st}})

	_, body := get(t, srv.URL+"/metrics", "")
	for _, want := range []string{
		`edge_agent_input_events_filtered_total{input="app"} 3`,
		`edge_agent_sensor_readings_total{input="s1"} 5`,
		`edge_agent_sensor_readings_total{input="s2"} 6`,
		`edge_agent_sensor_probes_open{input="s1"} 0`,
		`edge_agent_sensor_faults_total{input="s2",probe="p2"} 4`,
		`edge_agent_bytes_read_total 110`,
		"# TYPE edge_agent_sensor_probes_open gauge",
		"# HELP edge_agent_sensor_readings_total Readings taken.",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, `input="quiet"`) || strings.Contains(body, `bytes_read_total{`) {
		t.Errorf("a series for an input that describes nothing, or a Total one labelled:\n%s", body)
	}

	code, body := get(t, srv.URL+"/debug/status", "")
	if code != http.StatusOK {
		t.Fatalf("/debug/status: %d %s", code, body)
	}
	var raw struct {
		Inputs []map[string]any `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	s2 := raw.Inputs[4]
	for key, want := range map[string]any{"id": "s2", "type": "sensor", "readings": 6.0, "probes_open": 2.0, "firmware": "v7", "summary": "a line for people"} {
		if s2[key] != want {
			t.Errorf("inputs[4].%s = %v, want %v", key, s2[key], want)
		}
	}
	if _, ok := raw.Inputs[3]["probes_open"]; ok {
		t.Error("an OmitZero figure shown while 0")
	}
	if _, ok := s2["empty"]; ok {
		t.Error("an empty text shown")
	}
	if _, ok := raw.Inputs[2]["files"]; ok {
		t.Error("files listed for an input that reads none")
	}
	if f, ok := raw.Inputs[1]["files"]; !ok || f == nil {
		t.Errorf("an input reading files, none now, must list files as []: %v", raw.Inputs[1])
	}

	var got Status
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if !got.ListsFiles() || len(got.Inputs) != 5 || got.Inputs[1].Files == nil || got.Inputs[2].Files != nil {
		t.Errorf("files decoded: %+v", got.Inputs)
	}
	if got.Input == nil || !hasFigure(*got.Input, "readings", 11) {
		t.Errorf("summed input: %+v", got.Input)
	}
	want := inputDoc("s2", "sensor", sensor(6, 2, "p2"))
	if g := got.Inputs[4]; !reflect.DeepEqual(g.Values, want.Values) || !reflect.DeepEqual(g.Texts, want.Texts) ||
		!reflect.DeepEqual(g.Lines, want.Lines) || g.Summary != want.Summary || len(g.Records) != 1 ||
		string(g.Records[0].JSON) != `[{"name":"p2"}]` {
		t.Errorf("decoded s2 = %+v, want %+v", g, want)
	}
}

// The input document reads back what it wrote, in order, so `status
// --json` (which decodes the API's answer and encodes it again) prints
// what the API served.
func TestInputDocumentRoundTrips(t *testing.T) {
	for _, doc := range []Input{
		{Type: "file"},
		inputDoc("s", "sensor", sensor(1, 1, "p")),
		{ID: "f", Type: "file", Values: []Figure{{"events", 3}}, Files: []File{}},
		{ID: "f", Type: "file", Files: []File{{Path: "a", Identity: "i", Offset: 1, Size: 2, Lag: 1, Open: true}}},
	} {
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var got Input
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		b2, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(b2) || !reflect.DeepEqual(got, doc) {
			t.Errorf("round trip:\n %s\n %s\n%+v\n%+v", b, b2, doc, got)
		}
	}
}

func FuzzInputDocument(f *testing.F) {
	f.Add(`{"id":"a","type":"file","lines_read":3,"cursor":"s=1","collectors":[{"name":"x"}],"files":[]}`)
	f.Add(`{"type":"x","n":-1,"summary":"s","lines":[{"label":"l","text":"t"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		var in Input
		if json.Unmarshal([]byte(s), &in) != nil {
			return
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode: %v", s, err)
		}
		var again Input
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatalf("cannot decode what it wrote %s: %v", b, err)
		}
		b2, _ := json.Marshal(again)
		if string(b) != string(b2) {
			t.Fatalf("not stable:\n%s\n%s", b, b2)
		}
	})
}
