package api

import (
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/output"
)

// Status is /debug/status and `edge-agent status --json`. From a stopped
// agent (Source "wal") only the WAL's fields are filled.
type Status struct {
	Running bool   `json:"running"`
	PID     int    `json:"pid,omitempty"`
	Source  string `json:"source"` // "api" (the running agent) or "wal" (the file of a stopped one)
	State   string `json:"state"`  // starting, running, stopping, stopped

	AgentID    string `json:"agent_id,omitempty"`
	InputID    string `json:"input_id,omitempty"`
	OutputID   string `json:"output_id,omitempty"`
	Version    string `json:"version,omitempty"`
	Commit     string `json:"commit,omitempty"`
	ConfigHash string `json:"config_hash,omitempty"`

	StartedAt     *time.Time `json:"started_at,omitempty"`
	UptimeSeconds float64    `json:"uptime_seconds"`

	Connection   string     `json:"connection,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
	LastErrorAt  *time.Time `json:"last_error_at,omitempty"`
	WALError     string     `json:"wal_error,omitempty"`
	Backpressure bool       `json:"backpressure"`
	// Window is the output's congestion window: the batch lines that may
	// await replies at once; absent when the output keeps none.
	Window int `json:"window,omitempty"`
	// Endpoints lists each endpoint of output.endpoints, in list order;
	// absent with a single endpoint.
	Endpoints []Endpoint `json:"endpoints,omitempty"`

	WAL      WALStatus `json:"wal"`
	Counters *Counters `json:"counters,omitempty"`
	// Health is /healthz's judgement with each component's part.
	Health *Health `json:"health,omitempty"`
	// RateLimit is output.rate-limit in force; absent without a cap.
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// Input is every input's figures summed (and the single input's
	// type): the Values only.
	Input *Input `json:"input,omitempty"`
	// Files are the inputs' tracked files, when they can list them.
	Files []File `json:"files,omitempty"`
	// Inputs are each input's own figures and files, in config order
	// (one entry for the single input: form).
	Inputs []Input `json:"inputs,omitempty"`

	// Management is the fleet side: the OpAMP instance uid (always) and,
	// when management.opamp is on, the server and the last remote config.
	Management *Management `json:"management,omitempty"`
}

// Management is the OpAMP part of the status.
type Management struct {
	InstanceUID string `json:"instance_uid"`
	// ConfigSource is local (agent.yaml) or remote (from the server).
	ConfigSource string `json:"config_source"`
	Endpoint     string `json:"opamp_endpoint,omitempty"`
	Connected    *bool  `json:"opamp_connected,omitempty"`
	// RemoteConfig is UNSET, APPLYING, APPLIED or FAILED.
	RemoteConfig      string `json:"remote_config,omitempty"`
	RemoteConfigError string `json:"remote_config_error,omitempty"`
	// Versions is set when self-upgrade is on.
	Versions *Versions `json:"versions,omitempty"`
}

// File is one tracked file.
type File struct {
	Path     string `json:"path"`
	Identity string `json:"identity"`
	Offset   int64  `json:"offset"`
	Size     int64  `json:"size"`
	Lag      int64  `json:"lag_bytes"`
	Open     bool   `json:"open"`
}

// CommitStatus is the moving estimate of a WAL commit's cost.
type CommitStatus struct {
	// FsyncSeconds is one commit's disk time: its page writes and
	// fdatasyncs.
	FsyncSeconds float64 `json:"fsync_seconds"`
	// RowSeconds is the loop's time per row under load, disk excluded;
	// 0 until the input kept the loop busy.
	RowSeconds float64 `json:"row_seconds"`
	// GroupMaxEvents is the most events a commit group grows to now.
	GroupMaxEvents int `json:"group_max_events"`
}

// WALStatus is the queue's content.
type WALStatus struct {
	Pending int64 `json:"pending"`
	Sending int64 `json:"sending"`
	Acked   int64 `json:"acked"`
	Dead    int64 `json:"dead"`
	// Received are rows the engine RECEIVED that no completed checkpoint
	// covers yet (delivery-guarantee CHECKPOINT); they stay in the WAL.
	Received int64 `json:"received"`
	// Bytes is the payload queued, the figure compared with queue.max-bytes.
	Bytes int64 `json:"bytes"`
	// FileBytes is the WAL file's size (bbolt never shrinks it).
	FileBytes               int64   `json:"file_bytes"`
	OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
	// Commit is what WAL commits cost and the commit group that follows
	// (queue.fsync-share); absent until a commit was measured.
	Commit *CommitStatus `json:"commit,omitempty"`
	// Dropping is true while queue.when-full: drop-oldest or
	// queue.max-age-ms delete unsent rows (until 10 s without a drop).
	Dropping bool `json:"dropping"`
	// Dropped are the unsent rows those bounds deleted since the WAL file
	// was created, by reason.
	Dropped WALDrops `json:"dropped"`
	// DropHeld is true while the queue is above queue.max-bytes and holds
	// no row the drops may delete (rows of inputs with queue-drop: never,
	// or in flight): reading pauses as with when-full: block.
	DropHeld bool `json:"drop_held,omitempty"`
	// Lanes is the backlog of each priority lane, highest first
	// (queue.lanes, queue.drain: newest-first); absent otherwise.
	Lanes []WALLane `json:"lanes,omitempty"`
}

// WALLane is one lane's backlog: its due PENDING rows, their payload
// bytes and the age of the oldest.
type WALLane struct {
	Name             string  `json:"name"`
	Rows             int64   `json:"rows"`
	Bytes            int64   `json:"bytes"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
}

// WALDrops count the unsent rows the WAL's bounds deleted, by reason.
type WALDrops struct {
	FullRows  int64 `json:"full_rows"`
	FullBytes int64 `json:"full_bytes"`
	AgeRows   int64 `json:"age_rows"`
	AgeBytes  int64 `json:"age_bytes"`
}

// RateLimit is the send-rate cap in force and the backlog's time to go
// out at it.
type RateLimit struct {
	// EventsPerSecond and BytesPerSecond are the caps (0: not capped).
	EventsPerSecond float64 `json:"events_per_second"`
	BytesPerSecond  int64   `json:"bytes_per_second"`
	// BurstEvents and BurstBytes are the buckets' sizes (0: not capped).
	BurstEvents int `json:"burst_events"`
	BurstBytes  int `json:"burst_bytes"`
	// BacklogETASeconds is how long the rows queued now take to go out at
	// the cap, if the link keeps up with it.
	BacklogETASeconds float64 `json:"backlog_eta_seconds"`
}

// Counters are the agent's totals since start.
type Counters struct {
	EventsRead   uint64 `json:"events_read"`
	RowsAppended uint64 `json:"rows_appended"`
	Sent         uint64 `json:"sent"`
	Acked        uint64 `json:"acked"`
	Failed       uint64 `json:"failed"`
	Released     uint64 `json:"released"`
	Dead         uint64 `json:"dead"`
	Dropped      uint64 `json:"dropped"`
	Retries      uint64 `json:"retries"`
	SendErrors   uint64 `json:"send_errors"`
	Reconnects   uint64 `json:"reconnects"`
	// Sends and SendSeconds are the count and the summed duration of the
	// sends to the engine (edge_agent_send_latency_seconds).
	Sends       uint64  `json:"sends"`
	SendSeconds float64 `json:"send_seconds"`
	// SendThrottledSeconds is the time the sender waited for the rate cap.
	SendThrottledSeconds float64 `json:"send_throttled_seconds"`
}

// Health is agent.Health: whether the agent is healthy, why not, and each
// component's part (input, wal, output).
type Health struct {
	Healthy    bool                       `json:"healthy"`
	Reason     string                     `json:"reason,omitempty"`
	Components map[string]ComponentHealth `json:"components"`
}

// ComponentHealth is one component's part of Health.
type ComponentHealth struct {
	Healthy   bool   `json:"healthy"`
	Status    string `json:"status"`
	LastError string `json:"last_error,omitempty"`
}

func healthDoc(h agent.Health) *Health {
	out := &Health{Healthy: h.Healthy, Reason: h.Reason, Components: make(map[string]ComponentHealth, len(h.Components))}
	for name, c := range h.Components {
		out.Components[name] = ComponentHealth{Healthy: c.Healthy, Status: c.Status, LastError: c.LastError}
	}
	return out
}

// Endpoint is one endpoint of output.endpoints.
type Endpoint struct {
	Endpoint string `json:"endpoint"`
	// State: idle, connected, unavailable, rejected, auth_failed,
	// decrypt_failed (what the last send or probe found).
	State string `json:"state"`
	// Active: sent to now (failover's one; spread's every endpoint up).
	Active      bool       `json:"active"`
	Sent        uint64     `json:"sent"`
	Received    uint64     `json:"received"`
	Switches    uint64     `json:"switches,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
}

func endpointDocs(eps []output.EndpointStatus) []Endpoint {
	var out []Endpoint
	for _, e := range eps {
		d := Endpoint{Endpoint: e.Endpoint, State: e.State, Active: e.Active, Sent: e.Sent, Received: e.Received,
			Switches: e.Switches, LastError: e.LastError}
		if !e.LastErrorAt.IsZero() {
			t := e.LastErrorAt
			d.LastErrorAt = &t
		}
		out = append(out, d)
	}
	return out
}

// configHash is the hash of the config in force: the last reload's, else
// the one the agent started with.
func configHash(st agent.Status, o *Options) string {
	if st.ConfigHash != "" {
		return st.ConfigHash
	}
	return o.ConfigHash
}

// statusOf builds the document of a running agent.
func statusOf(st agent.Status, o *Options, now time.Time) Status {
	out := Status{
		Running: true, Source: "api", State: st.State,
		AgentID: st.AgentID, InputID: st.InputID, OutputID: st.OutputID,
		Version: o.Version, Commit: o.Commit, ConfigHash: configHash(st, o),
		Connection: st.Connection, LastError: st.LastError, WALError: st.WALError, Window: st.Window,
		Backpressure: st.Backpressure,
		WAL: WALStatus{
			Pending: st.Queue.Pending, Sending: st.Queue.Sending, Acked: st.Queue.Acked, Dead: st.Queue.Dead,
			Received: st.Queue.Received, Bytes: st.Queue.SizeBytes, FileBytes: st.Queue.FileBytes,
			OldestPendingAgeSeconds: st.Queue.OldestPendingAge.Seconds(),
			Commit:                  commitStatus(st.Queue.Commit),
			Dropping:                st.Drops.Dropping,
			DropHeld:                st.Drops.Held,
			Dropped: WALDrops{FullRows: st.Drops.FullRows, FullBytes: st.Drops.FullBytes,
				AgeRows: st.Drops.AgeRows, AgeBytes: st.Drops.AgeBytes},
		},
		Counters: &Counters{
			EventsRead: st.EventsRead, RowsAppended: st.RowsAppended, Sent: st.Sent, Acked: st.Acked,
			Failed: st.Failed, Released: st.Released, Dead: st.Dead, Dropped: st.Dropped,
			Retries: st.Retries, SendErrors: st.SendErrors, Reconnects: st.Reconnects,
			Sends: st.SendLatency.Count, SendSeconds: st.SendLatency.Sum.Seconds(),
			SendThrottledSeconds: st.SendThrottled.Seconds(),
		},
		Health: healthDoc(st.Health(now, o.StallAfter)),
	}
	for _, l := range st.Queue.Lanes {
		out.WAL.Lanes = append(out.WAL.Lanes, WALLane{Name: l.Name, Rows: l.Rows, Bytes: l.Bytes, OldestAgeSeconds: l.OldestAge.Seconds()})
	}
	if rl := st.RateLimit; rl.On() {
		out.RateLimit = &RateLimit{EventsPerSecond: rl.EventsPerSecond, BytesPerSecond: rl.BytesPerSecond,
			BurstEvents: rl.EventBurst, BurstBytes: rl.ByteBurst, BacklogETASeconds: rl.BacklogETA.Seconds()}
	}
	if !st.StartedAt.IsZero() {
		t := st.StartedAt
		out.StartedAt = &t
		out.UptimeSeconds = max(0, now.Sub(t).Seconds())
	}
	if !st.LastErrorAt.IsZero() {
		t := st.LastErrorAt
		out.LastErrorAt = &t
	}
	if s := st.Input; s != nil {
		out.Input = &Input{Type: st.InputType, Values: figures(s.Values)}
	}
	if o.Management != nil {
		out.Management = o.Management()
	}
	out.Files = fileDocs(st.Files)
	out.Endpoints = endpointDocs(st.Endpoints)
	for _, in := range st.Inputs {
		out.Inputs = append(out.Inputs, inputDoc(in.ID, in.Type, in.Description))
	}
	return out
}

func commitStatus(c agent.CommitEstimate) *CommitStatus {
	if c.Disk <= 0 {
		return nil
	}
	return &CommitStatus{FsyncSeconds: c.Disk.Seconds(), RowSeconds: c.PerRow.Seconds(), GroupMaxEvents: c.GroupCeiling}
}
