package management

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/opamptask"
	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// fakeTasks: "count" answers details, "bundle" an attachment of size
// bytes, "fail" an error.
type fakeTasks struct{ size int }

func (fakeTasks) Names() []string { return []string{"count", "bundle", "fail"} }

func (f fakeTasks) Run(_ context.Context, task string, _ json.RawMessage) (TaskOutcome, error) {
	switch task {
	case "count":
		return TaskOutcome{Details: map[string]int{"rows": 7}}, nil
	case "bundle":
		return TaskOutcome{Attachment: bytes.Repeat([]byte("0123456789abcdef"), f.size/16)}, nil
	}
	return TaskOutcome{}, errors.New("the WAL said no")
}

func (f *fixture) result(t *testing.T, id string) opampdev.TaskResult {
	t.Helper()
	var res opampdev.TaskResult
	f.wait(t, "the result of "+id, func(opampdev.Agent) bool {
		var ok bool
		res, ok = f.srv.Result(id)
		return ok
	})
	return res
}

func TestTasksAnswerEachRequest(t *testing.T) {
	const size = 2*opamptask.ChunkBytes + 4096 // three chunks
	f := newFixture(t, func(o *Options) { o.Tasks = fakeTasks{size: size} })
	f.start(t)
	uid := f.uid.String()
	f.wait(t, "the task capability", func(a opampdev.Agent) bool {
		return slices.Contains(a.CustomCapabilities, opamptask.Capability)
	})
	send := func(id, task string) {
		t.Helper()
		if err := f.srv.SendTask(uid, id, task, nil); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		id, task string
		ok       bool
		details  string
		errHas   string
		bytes    int
	}{
		{id: "1", task: "count", ok: true, details: `{"rows":7}`},
		{id: "2", task: "bundle", ok: true, bytes: size},
		{id: "3", task: "fail", errHas: "the WAL said no"},
		{id: "4", task: "fly", errHas: `unknown task "fly"; this agent runs: count, bundle, fail`},
	}
	for _, tt := range tests {
		t.Run(tt.task, func(t *testing.T) {
			send(tt.id, tt.task)
			res := f.result(t, tt.id)
			if res.OK != tt.ok || res.Task != tt.task || !strings.Contains(res.Error, tt.errHas) || res.Problem != "" {
				t.Fatalf("result %+v", res)
			}
			if tt.details != "" && string(res.Details) != tt.details {
				t.Errorf("details %s, want %s", res.Details, tt.details)
			}
			if res.Bytes != tt.bytes || len(res.Attachment) != tt.bytes {
				t.Errorf("attachment %d bytes (announced %d), want %d", len(res.Attachment), res.Bytes, tt.bytes)
			}
			if tt.bytes > 0 && (res.Chunks != 3 || !bytes.Equal(res.Attachment[:16], []byte("0123456789abcdef"))) {
				t.Errorf("chunks %d", res.Chunks)
			}
		})
	}
	for _, bad := range []struct{ typ, data, errHas string }{
		{"task", `{"id":"x",`, "malformed task"},
		{"task", `{"id":"y"}`, `malformed task: no "task" field`},
		{"order", `{}`, `custom message type "order" is not a task`},
	} {
		if err := f.srv.SendCustom(uid, bad.typ, []byte(bad.data)); err != nil {
			t.Fatal(err)
		}
		f.wait(t, "an error naming "+bad.errHas, func(opampdev.Agent) bool {
			for _, r := range f.srv.Results() {
				if !r.OK && strings.Contains(r.Error, bad.errHas) {
					return true
				}
			}
			return false
		})
	}
}

func TestNoTasksNoCapability(t *testing.T) {
	f := newFixture(t, nil)
	f.start(t)
	a := f.wait(t, "registered", func(a opampdev.Agent) bool { return a.Identifying != nil })
	if len(a.CustomCapabilities) != 0 {
		t.Errorf("custom capabilities %v without tasks", a.CustomCapabilities)
	}
	if err := f.srv.SendTask(f.uid.String(), "1", "count", nil); err == nil {
		t.Error("the server could send a task to an agent that advertises none")
	}
}
