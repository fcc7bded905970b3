package opampdev

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/edge-agent/edge-agent/starter/internal/opamptask"
)

// TaskResult is an agent's answer to a task, with its attachment (the
// diagnostics bundle) put together from its chunks.
type TaskResult struct {
	opamptask.Result
	Attachment []byte `json:"-"`
	// Problem is set when the chunks did not add up to what the result
	// announced.
	Problem string `json:"problem,omitempty"`
}

// tasksState is what the server keeps of tasks: per task id the chunks
// received and the result.
type tasksState struct {
	chunks  map[string][][]byte
	results map[string]*TaskResult
	order   []string
	// raw are the results that did not decode, for tests of malformed
	// answers.
	raw []string
}

// SendTask sends the task to a connected agent that advertised the task
// capability; its answer shows in Result(id).
func (s *Server) SendTask(uid, id, task string, args json.RawMessage) error {
	data, err := json.Marshal(opamptask.Request{ID: id, Task: task, Args: args})
	if err != nil {
		return err
	}
	return s.SendCustom(uid, opamptask.TaskMessage, data)
}

// SendCustom sends any custom message of the task capability (a test may
// send a malformed one).
func (s *Server) SendCustom(uid, typ string, data []byte) error {
	s.mu.Lock()
	c, ok := s.conns[uid]
	a := s.agents[uid]
	takes := a != nil && slices.Contains(a.CustomCapabilities, opamptask.Capability)
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("agent %s is not connected", uid)
	}
	if !takes {
		return fmt.Errorf("agent %s does not advertise %s", uid, opamptask.Capability)
	}
	raw, err := uuid.Parse(uid)
	if err != nil {
		return fmt.Errorf("instance uid %q: %w", uid, err)
	}
	return c.Send(context.Background(), &protobufs.ServerToAgent{InstanceUid: raw[:],
		CustomMessage: &protobufs.CustomMessage{Capability: opamptask.Capability, Type: typ, Data: data}})
}

// Result returns the answer to task id, once it arrived.
func (s *Server) Result(id string) (TaskResult, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.tasks.results[id]
	if !ok {
		return TaskResult{}, false
	}
	return *r, true
}

// Results returns every answer received, in arrival order.
func (s *Server) Results() []TaskResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TaskResult, 0, len(s.tasks.order))
	for _, id := range s.tasks.order {
		out = append(out, *s.tasks.results[id])
	}
	return out
}

// onCustom keeps a custom message from an agent; s.mu is held.
func (s *Server) onCustom(m *protobufs.CustomMessage) {
	if m.GetCapability() != opamptask.Capability {
		return
	}
	t := &s.tasks
	if t.chunks == nil {
		t.chunks, t.results = map[string][][]byte{}, map[string]*TaskResult{}
	}
	switch m.GetType() {
	case opamptask.ChunkMessage:
		var ch opamptask.Chunk
		if err := json.Unmarshal(m.GetData(), &ch); err != nil {
			t.raw = append(t.raw, string(m.GetData()))
			return
		}
		t.chunks[ch.ID] = append(t.chunks[ch.ID], ch.Data)
	case opamptask.ResultMessage:
		var res opamptask.Result
		if err := json.Unmarshal(m.GetData(), &res); err != nil {
			t.raw = append(t.raw, string(m.GetData()))
			return
		}
		r := &TaskResult{Result: res}
		parts := t.chunks[res.ID]
		delete(t.chunks, res.ID)
		for _, p := range parts {
			r.Attachment = append(r.Attachment, p...)
		}
		if len(parts) != res.Chunks || len(r.Attachment) != res.Bytes {
			r.Problem = fmt.Sprintf("announced %d chunks, %d bytes; got %d chunks, %d bytes", res.Chunks, res.Bytes, len(parts), len(r.Attachment))
		}
		if _, seen := t.results[res.ID]; !seen {
			t.order = append(t.order, res.ID)
		}
		t.results[res.ID] = r
	}
}
