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

	"github.com/edge-agent/edge-agent/starter/internal/opamptask"
)

// taskQueue bounds the tasks waiting to run; more are refused as busy.
const taskQueue = 4

// TaskOutcome is what a task did: Details (encoded as JSON) and an
// optional attachment.
type TaskOutcome struct {
	Details    any
	Attachment []byte
}

// Tasks are the operator tasks (custom messages of opamptask.Capability) the agent can run; only Names are
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
	return &protobufs.CustomCapabilities{Capabilities: []string{opamptask.Capability}}
}

// takeTask queues a custom message for runTasks, or answers busy.
func (c *Client) takeTask(m *protobufs.CustomMessage) {
	if c.o.Tasks == nil || m.GetCapability() != opamptask.Capability {
		return
	}
	select {
	case c.tasks <- m:
	default:
		req, _ := parseTask(m)
		c.sendResult(context.Background(), opamptask.Result{ID: req.ID, Task: req.Task,
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

func parseTask(m *protobufs.CustomMessage) (opamptask.Request, error) {
	var req opamptask.Request
	if m.GetType() != opamptask.TaskMessage {
		return req, fmt.Errorf("custom message type %q is not a task: send type %q with {\"id\":…,\"task\":…}", m.GetType(), opamptask.TaskMessage)
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
	res := opamptask.Result{ID: req.ID, Task: req.Task}
	names := c.o.Tasks.Names()
	if err == nil && !slices.Contains(names, req.Task) {
		err = fmt.Errorf("unknown task %q; this agent runs: %s", req.Task, strings.Join(names, ", "))
	}
	var out TaskOutcome
	if err == nil {
		c.log.Info("running a task from the OpAMP server", "task", req.Task, "task_id", req.ID)
		out, err = c.o.Tasks.Run(ctx, req.Task, req.Args)
	}
	if err == nil && len(out.Attachment) > opamptask.MaxAttachment {
		err = fmt.Errorf("the %s attachment is %d bytes, over the %d-byte limit", req.Task, len(out.Attachment), opamptask.MaxAttachment)
	}
	if err == nil && out.Details != nil {
		if res.Details, err = json.Marshal(out.Details); err != nil {
			err = fmt.Errorf("encode the task's details: %w", err)
		}
	}
	if err == nil && len(out.Attachment) > 0 {
		res.Chunks, res.Bytes = (len(out.Attachment)+opamptask.ChunkBytes-1)/opamptask.ChunkBytes, len(out.Attachment)
		for seq := range res.Chunks {
			part := out.Attachment[seq*opamptask.ChunkBytes : min(len(out.Attachment), (seq+1)*opamptask.ChunkBytes)]
			data, _ := json.Marshal(opamptask.Chunk{ID: req.ID, Seq: seq, Of: res.Chunks, Data: part}) // plain struct: cannot fail
			if err = c.sendCustom(ctx, opamptask.ChunkMessage, data); err != nil {
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

func (c *Client) sendResult(ctx context.Context, res opamptask.Result) {
	data, _ := json.Marshal(res) // plain struct: cannot fail
	if err := c.sendCustom(ctx, opamptask.ResultMessage, data); err != nil {
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
	msg := &protobufs.CustomMessage{Capability: opamptask.Capability, Type: typ, Data: data}
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
