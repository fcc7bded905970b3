package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/output"
)

// DefaultStallAfter is how long the scheduler loop may go without a turn
// before the agent counts as unhealthy. The loop turns at least every
// agent.idle-sleep-ms even when idle; a minute leaves room for a slow fsync.
const DefaultStallAfter = time.Minute

// Component names of Health, as /healthz and the OpAMP health report use
// them.
const (
	ComponentInput  = "input"
	ComponentWAL    = "wal"
	ComponentOutput = "output"
)

// DegradedDropping is the Reason of a healthy agent whose WAL bounds are
// deleting unsent rows (queue.when-full: drop-oldest, queue.max-age-ms).
const DegradedDropping = "degraded: dropping"

// ComponentHealth is one component's part of Health.
type ComponentHealth struct {
	Healthy bool
	// Status is a short word for dashboards (running, stalled, writable,
	// not_writable, or the output's Connection).
	Status string
	// LastError is why it is unhealthy, or the last error it reported.
	LastError string
}

// Health is the one judgement of whether the agent is worth keeping: the
// loop turns, the WAL takes writes and the engine accepts this agent. An
// engine that is merely unavailable is the engine's problem, retried, not
// ours. /healthz answers from it and OpAMP reports it, so both tell the
// same story.
type Health struct {
	Healthy bool
	// Reason says why the agent is unhealthy ("" when healthy).
	Reason     string
	Components map[string]ComponentHealth
}

// Health judges s at now; a zero stallAfter means DefaultStallAfter.
func (s Status) Health(now time.Time, stallAfter time.Duration) Health {
	if stallAfter <= 0 {
		stallAfter = DefaultStallAfter
	}
	in := ComponentHealth{Healthy: true, Status: "running"}
	if s.Backpressure {
		in.Status = "backpressure"
	}
	if s.State == "running" && !s.LastTurn.IsZero() && now.Sub(s.LastTurn) > stallAfter {
		in = ComponentHealth{Status: "stalled",
			LastError: fmt.Sprintf("scheduler loop has not turned for %s", now.Sub(s.LastTurn).Round(time.Second))}
	}
	w := ComponentHealth{Healthy: true, Status: "writable"}
	if s.Drops.Dropping {
		w.Status = "dropping"
	}
	if s.WALError != "" {
		w = ComponentHealth{Status: "not_writable", LastError: "WAL not writable: " + s.WALError}
	}
	out := ComponentHealth{Healthy: true, Status: s.Connection}
	switch s.Connection {
	case "auth_failed", "decrypt_failed":
		out.Healthy, out.LastError = false, "engine refused the agent ("+s.Connection+"): "+s.LastError
	case "rejected":
		out.Healthy, out.LastError = false, "engine rejected the connection: "+s.LastError
	case "unavailable":
		out.LastError = s.LastError
	}
	if down := endpointsDown(s.Endpoints); out.Healthy && down != "" {
		// A standby or a spread peer down is not an outage while others
		// take the rows; it is said, not judged.
		out.LastError = down
	}
	h := Health{Healthy: true, Components: map[string]ComponentHealth{
		ComponentInput: in, ComponentWAL: w, ComponentOutput: out,
	}}
	switch {
	case s.State == "stopping" || s.State == "stopped":
		h.Healthy, h.Reason = false, "agent is "+s.State
	case !w.Healthy:
		h.Healthy, h.Reason = false, w.LastError
	case !in.Healthy:
		h.Healthy, h.Reason = false, in.LastError
	case !out.Healthy:
		h.Healthy, h.Reason = false, out.LastError
	case s.CheckpointStall != "":
		out.LastError = s.CheckpointStall
		h.Components[ComponentOutput] = out
		h.Reason = s.CheckpointStall
	case s.Drops.Dropping:
		h.Reason = DegradedDropping
	}
	return h
}

// endpointsDown names the endpoints of output.endpoints whose last send
// or probe failed, "" when none did.
func endpointsDown(eps []output.EndpointStatus) string {
	var down []string
	for _, e := range eps {
		if e.State != "connected" && e.State != "idle" {
			down = append(down, e.Endpoint+" "+e.State)
		}
	}
	if len(down) == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d endpoints down: %s", len(down), len(eps), strings.Join(down, ", "))
}
