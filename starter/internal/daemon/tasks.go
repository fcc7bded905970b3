package daemon

import (
	"context"
	"encoding/json"
	"fmt"
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

func (t *tasks) reread(ctx context.Context, raw json.RawMessage) (management.TaskOutcome, error) {
	a, err := dbview.ParseRereadArgs(raw)
	if err != nil {
		return management.TaskOutcome{}, err
	}
	rep, err := rereadReport(ctx, t.rt, a)
	if err != nil {
		return management.TaskOutcome{}, err
	}
	return management.TaskOutcome{Details: rep}, nil
}

// rereadReport has the agent's loop make the reread a asks for (the
// task and POST /db/reread both).
func rereadReport(ctx context.Context, rt *agent.Agent, a dbview.RereadArgs) (dbview.RereadReport, error) {
	if err := a.Check(); err != nil {
		return dbview.RereadReport{}, err
	}
	out, err := rt.Reread(ctx, a.Input, a.Path, a.OffsetOr0())
	if err != nil {
		return dbview.RereadReport{}, err
	}
	return dbview.NewRereadReport(out.Input, out.RereadResult), nil
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
