package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/dbview"
	"github.com/edge-agent/edge-agent/starter/internal/management"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// Task names the OpAMP server may send (management.TaskCapability).
const (
	TaskRetryDead   = "retry-dead"
	TaskPurgeDead   = "purge-dead"
	TaskBacklog     = "backlog"
	TaskDiagnostics = "diagnostics"
	TaskReread      = "reread"
)

// tasks are the operator tasks of a running agent (management.Tasks).
type tasks struct {
	rt     *agent.Agent
	diag   *diagnostics
	hasWAL bool // delivery is not NON
	now    func() time.Time
}

// Names lists what this agent can do: the WAL tasks only with a WAL,
// reread only while an input that can re-read runs (the file input).
func (t *tasks) Names() []string {
	var names []string
	if t.hasWAL {
		names = append(names, TaskRetryDead, TaskPurgeDead)
	}
	names = append(names, TaskBacklog, TaskDiagnostics)
	if len(t.rt.Rereadable()) > 0 {
		names = append(names, TaskReread)
	}
	return names
}

// RereadArgs are the reread task's args: the file (as the input names
// it: an absolute path under its globs), the byte offset to read again
// from (default 0) and, when several file inputs run, the input's id.
type RereadArgs struct {
	Path   string `json:"path"`
	Offset *int64 `json:"offset,omitempty"`
	Input  string `json:"input,omitempty"`
}

// parseRereadArgs decodes and checks the reread task's args.
func parseRereadArgs(raw json.RawMessage) (RereadArgs, error) {
	var a RereadArgs
	const form = `{"path":"/var/log/app.log","offset":0,"input":"app-logs"}`
	if len(raw) == 0 || string(raw) == "null" {
		return a, fmt.Errorf(`task %s needs args %s ("offset" and "input" optional)`, TaskReread, form)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("task %s: malformed args: %w; send %s", TaskReread, err, form)
	}
	if strings.TrimSpace(a.Path) == "" {
		return a, fmt.Errorf(`task %s: no "path": name the file to read again, e.g. %s`, TaskReread, form)
	}
	if a.Offset != nil && *a.Offset < 0 {
		return a, fmt.Errorf(`task %s: "offset" %d is negative; give a byte offset of 0 or more`, TaskReread, *a.Offset)
	}
	return a, nil
}

// rereadReport is the reread task's details (input.RereadResult's
// figures): where reading restarts and how many bytes are delivered
// again (reread_bytes) or skipped (skipped_bytes, an offset past what
// was delivered).
type rereadReport struct {
	Input     string `json:"input"`
	Path      string `json:"path"`
	Identity  string `json:"identity"`
	Requested int64  `json:"requested_offset"`
	Start     int64  `json:"offset"`
	// Aligned: the requested offset fell inside a line, so reading
	// restarts at the next line's start.
	Aligned  bool  `json:"aligned_to_next_line"`
	Line     int64 `json:"next_line"`
	Previous int64 `json:"previous_offset"`
	Size     int64 `json:"size"`
	Reread   int64 `json:"reread_bytes"`
	Skipped  int64 `json:"skipped_bytes"`
	// Note says in words what the figures mean.
	Note string `json:"note"`
}

func (t *tasks) reread(ctx context.Context, raw json.RawMessage) (management.TaskOutcome, error) {
	a, err := parseRereadArgs(raw)
	if err != nil {
		return management.TaskOutcome{}, err
	}
	var offset int64
	if a.Offset != nil {
		offset = *a.Offset
	}
	out, err := t.rt.Reread(ctx, a.Input, a.Path, offset)
	if err != nil {
		return management.TaskOutcome{}, err
	}
	return management.TaskOutcome{Details: rereadReport{Input: out.Input, Path: out.Path, Identity: out.Identity,
		Requested: out.Requested, Start: out.Start, Aligned: out.Aligned, Line: out.Line + 1, Previous: out.Previous,
		Size: out.Size, Reread: out.Reread, Skipped: out.Skipped, Note: rereadNote(out)}}, nil
}

// rereadNote is the outcome in one sentence.
func rereadNote(o agent.RereadOutcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "input %s reads %s again from byte %d (line %d)", o.Input, o.Path, o.Start, o.Line+1)
	if o.Aligned {
		fmt.Fprintf(&b, ", the start of the line after offset %d, which fell inside a line", o.Requested)
	}
	switch {
	case o.Reread > 0:
		fmt.Fprintf(&b, ": %d bytes delivered before are delivered again", o.Reread)
	case o.Skipped > 0:
		fmt.Fprintf(&b, ": %d bytes not delivered yet are skipped", o.Skipped)
	default:
		b.WriteString(": nothing delivered before is delivered again")
	}
	return b.String()
}

// backlogReport is the backlog task's details.
type backlogReport struct {
	Queue      backlogQueue `json:"queue"`
	Connection string       `json:"connection"`
	// Summary is the WAL's per-status counts and oldest rows (no payload).
	Summary *dbview.Summary `json:"wal,omitempty"`
}

// backlogQueue is the queue as the loop last published it.
type backlogQueue struct {
	Pending                 int64   `json:"pending"`
	Sending                 int64   `json:"sending"`
	Acked                   int64   `json:"acked"`
	Dead                    int64   `json:"dead"`
	PayloadBytes            int64   `json:"payload_bytes"`
	FileBytes               int64   `json:"file_bytes"`
	OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
}

// Run runs one task. The WAL changes go through the scheduler loop, as
// `edge-agent db wal-retry-dead` does through the API; their details are
// dbview.Result (rows changed).
func (t *tasks) Run(ctx context.Context, task string, args json.RawMessage) (management.TaskOutcome, error) {
	if task == TaskReread {
		return t.reread(ctx, args)
	}
	if len(args) > 0 && string(args) != "null" && string(args) != "{}" {
		return management.TaskOutcome{}, fmt.Errorf("task %s takes no args, got %s", task, args)
	}
	switch task {
	case TaskRetryDead, TaskPurgeDead:
		c, err := dbview.ParseChange(task)
		if err != nil {
			return management.TaskOutcome{}, err
		}
		w := t.rt.WAL()
		if w == nil {
			return management.TaskOutcome{}, agent.ErrNoWAL
		}
		res := dbview.Result{Path: w.Path(), What: c.What()}
		err = t.rt.UpdateWAL(ctx, func(tx *wal.Tx) error {
			var err error
			res.Rows, err = c.Apply(tx, t.now().UnixMilli())
			return err
		})
		if err != nil {
			return management.TaskOutcome{}, fmt.Errorf("%s: %w", task, err)
		}
		return management.TaskOutcome{Details: res}, nil
	case TaskBacklog:
		// A no-op change runs between two loop transactions: what the
		// loop buffered is in the WAL, and it looks for PENDING rows to
		// send at once, before the figures are read.
		if t.rt.WAL() != nil {
			if err := t.rt.UpdateWAL(ctx, func(*wal.Tx) error { return nil }); err != nil {
				return management.TaskOutcome{}, fmt.Errorf("backlog: %w", err)
			}
		}
		st := t.rt.Snapshot()
		q := st.Queue
		rep := backlogReport{Connection: st.Connection, Queue: backlogQueue{Pending: q.Pending, Sending: q.Sending, Acked: q.Acked, Dead: q.Dead,
			PayloadBytes: q.PayloadBytes, FileBytes: q.FileBytes, OldestPendingAgeSeconds: q.OldestPendingAge.Seconds()}}
		if w := t.rt.WAL(); w != nil {
			s, err := dbview.ReadSummary(w)
			if err != nil {
				return management.TaskOutcome{}, fmt.Errorf("backlog: %w", err)
			}
			rep.Summary = &s
		}
		return management.TaskOutcome{Details: rep}, nil
	case TaskDiagnostics:
		data, err := t.diag.Bundle(ctx)
		if err != nil {
			return management.TaskOutcome{}, err
		}
		return management.TaskOutcome{Details: map[string]int{"bytes": len(data)}, Attachment: data}, nil
	}
	return management.TaskOutcome{}, fmt.Errorf("unknown task %q", task)
}
