package management

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// Operator tasks travel as OpAMP custom messages of one custom
// capability. The server sends a TaskMessage; the agent answers each with
// one ResultMessage (and, for a task with an attachment such as the
// diagnostics bundle, ChunkMessages first). Data are JSON.
const (
	TaskCapability = "io.edge-agent.tasks"
	// TaskMessage is a TaskRequest, server to agent.
	TaskMessage = "task"
	// ResultMessage is a TaskResult, agent to server.
	ResultMessage = "result"
	// ChunkMessage is a TaskChunk of a task's attachment, agent to server,
	// sent before its ResultMessage, in order.
	ChunkMessage = "chunk"
)

// ChunkBytes is the attachment bytes per ChunkMessage; MaxAttachment
// bounds an attachment (a bigger one is refused, not cut).
const (
	ChunkBytes    = 256 << 10
	MaxAttachment = 16 * ChunkBytes
)

// taskQueue bounds the tasks waiting to run; more are refused as busy.
const taskQueue = 4

// TaskRequest is what the server asks: ID is the server's, echoed in the
// result; Args are the task's own (none of the current tasks take any).
type TaskRequest struct {
	ID   string          `json:"id"`
	Task string          `json:"task"`
	Args json.RawMessage `json:"args,omitempty"`
}

// TaskResult is the answer: OK, or Error saying what went wrong; Details
// are the task's figures. Chunks and Bytes describe the attachment sent
// before this result (0 when none).
type TaskResult struct {
	ID      string          `json:"id"`
	Task    string          `json:"task"`
	OK      bool            `json:"ok"`
	Error   string          `json:"error,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
	Chunks  int             `json:"chunks,omitempty"`
	Bytes   int             `json:"bytes,omitempty"`
}

// TaskChunk is part Seq (from 0) of Of of a task's attachment.
type TaskChunk struct {
	ID   string `json:"id"`
	Seq  int    `json:"seq"`
	Of   int    `json:"of"`
	Data []byte `json:"data"`
}

// TaskOutcome is what a task did: Details (encoded as JSON) and an
// optional attachment.
type TaskOutcome struct {
	Details    any
	Attachment []byte
}

// Tasks are the operator tasks the agent can run; only Names are
// advertised and accepted.
type Tasks interface {
	Names() []string
	Run(ctx context.Context, task string, args json.RawMessage) (TaskOutcome, error)
}

// customCapabilities is what the agent advertises: the task capability
// only when it has tasks.
func (c *Client) customCapabilities() *protobufs.CustomCapabilities {
	if c.o.Tasks == nil || len(c.o.Tasks.Names()) == 0 {
		return &protobufs.CustomCapabilities{}
	}
	return &protobufs.CustomCapabilities{Capabilities: []string{TaskCapability}}
}

// takeTask queues a custom message for runTasks, or answers busy.
func (c *Client) takeTask(m *protobufs.CustomMessage) {
	if c.o.Tasks == nil || m.GetCapability() != TaskCapability {
		return
	}
	select {
	case c.tasks <- m:
	default:
		req, _ := parseTask(m)
		c.sendResult(context.Background(), TaskResult{ID: req.ID, Task: req.Task,
			Error: fmt.Sprintf("busy: %d tasks are queued; send it again once their results are in", taskQueue)})
	}
}

// runTasks runs tasks one at a time, off the library's callback goroutine.
func (c *Client) runTasks(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-c.tasks:
			c.runTask(ctx, m)
		}
	}
}

func parseTask(m *protobufs.CustomMessage) (TaskRequest, error) {
	var req TaskRequest
	if m.GetType() != TaskMessage {
		return req, fmt.Errorf("custom message type %q is not a task: send type %q with {\"id\":…,\"task\":…}", m.GetType(), TaskMessage)
	}
	if err := json.Unmarshal(m.GetData(), &req); err != nil {
		return req, fmt.Errorf("malformed task: %w; send {\"id\":\"…\",\"task\":\"…\"}", err)
	}
	if strings.TrimSpace(req.Task) == "" {
		return req, errors.New(`malformed task: no "task" field`)
	}
	return req, nil
}

func (c *Client) runTask(ctx context.Context, m *protobufs.CustomMessage) {
	req, err := parseTask(m)
	res := TaskResult{ID: req.ID, Task: req.Task}
	names := c.o.Tasks.Names()
	if err == nil && !slices.Contains(names, req.Task) {
		err = fmt.Errorf("unknown task %q; this agent runs: %s", req.Task, strings.Join(names, ", "))
	}
	var out TaskOutcome
	if err == nil {
		c.log.Info("running a task from the OpAMP server", "task", req.Task, "task_id", req.ID)
		out, err = c.o.Tasks.Run(ctx, req.Task, req.Args)
	}
	if err == nil && len(out.Attachment) > MaxAttachment {
		err = fmt.Errorf("the %s attachment is %d bytes, over the %d-byte limit", req.Task, len(out.Attachment), MaxAttachment)
	}
	if err == nil && out.Details != nil {
		if res.Details, err = json.Marshal(out.Details); err != nil {
			err = fmt.Errorf("encode the task's details: %w", err)
		}
	}
	if err == nil && len(out.Attachment) > 0 {
		res.Chunks, res.Bytes = (len(out.Attachment)+ChunkBytes-1)/ChunkBytes, len(out.Attachment)
		for seq := range res.Chunks {
			part := out.Attachment[seq*ChunkBytes : min(len(out.Attachment), (seq+1)*ChunkBytes)]
			data, _ := json.Marshal(TaskChunk{ID: req.ID, Seq: seq, Of: res.Chunks, Data: part}) // plain struct: cannot fail
			if err = c.sendCustom(ctx, ChunkMessage, data); err != nil {
				err = fmt.Errorf("send chunk %d of %d: %w", seq+1, res.Chunks, err)
				res.Chunks, res.Bytes = 0, 0
				break
			}
		}
	}
	if err != nil {
		res.Error = err.Error()
		c.log.Warn("task failed", "task", req.Task, "task_id", req.ID, "error", err.Error())
	} else {
		res.OK = true
	}
	c.sendResult(ctx, res)
}

func (c *Client) sendResult(ctx context.Context, res TaskResult) {
	data, _ := json.Marshal(res) // plain struct: cannot fail
	if err := c.sendCustom(ctx, ResultMessage, data); err != nil {
		c.log.Warn("task result not sent", "task", res.Task, "task_id", res.ID, "error", err.Error())
	}
}

// sendTimeout bounds one custom message's wait for the one before it.
const sendTimeout = 30 * time.Second

// sendCustom sends one custom message on the session's client, waiting
// (bounded) while the library still holds the previous one.
func (c *Client) sendCustom(ctx context.Context, typ string, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	msg := &protobufs.CustomMessage{Capability: TaskCapability, Type: typ, Data: data}
	for {
		c.mu.Lock()
		cl := c.cur
		c.mu.Unlock()
		if cl == nil {
			return errors.New("not connected to the OpAMP server")
		}
		pending, err := cl.SendCustomMessage(msg)
		if !errors.Is(err, types.ErrCustomMessagePending) {
			if err != nil {
				return err
			}
			// Wait until it is on its way, so that the next message (a
			// chunk, say) does not find it pending.
			select {
			case <-pending:
				return nil
			case <-ctx.Done():
				return fmt.Errorf("queued but not yet sent: %w", ctx.Err())
			}
		}
		select {
		case <-pending:
		case <-ctx.Done():
			return fmt.Errorf("the previous message is still unsent: %w", ctx.Err())
		}
	}
}
