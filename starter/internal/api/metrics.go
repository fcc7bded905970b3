package api

import (
	"slices"

	"github.com/edge-agent/edge-agent/connector/syslog"
	"github.com/edge-agent/edge-agent/starter/internal/fsspace"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("edge_agent_"+name, help, labels, nil)
}

var (
	dEventsRead    = desc("events_read_total", "Events the input returned (lines or multiline groups).")
	dBytesRead     = desc("bytes_read_total", "Raw bytes the input read.")
	dEventsAcked   = desc("events_acked_total", "Events the engine acknowledged (RECEIVED).")
	dWALRows       = desc("wal_rows", "Rows in the queue by status.", "status")
	dWALBytes      = desc("wal_bytes", "Payload bytes queued: the figure compared with queue.max-bytes.")
	dWALFileBytes  = desc("wal_file_bytes", "Size of the WAL file (bbolt never shrinks it).")
	dOldestPending = desc("oldest_pending_age_seconds", "Age of the oldest PENDING row; 0 when none.")
	dBatches       = desc("send_batches_total", "Batches (one WAL row each) by what the engine made of them.", "result")
	dLatency       = desc("send_latency_seconds", "Duration of one send to the engine (one job of rows, until every result is in).")
	dReconnects    = desc("reconnects_total", "Sessions authenticated with the engine after an earlier one was lost.")
	dFilesOpen     = desc("files_open", "File descriptors the input holds open.")
	dTruncated     = desc("lines_truncated_total", "Lines cut to the input's maximum line size.")
	dLostBytes     = desc("unread_bytes_lost_total", "Bytes known written to files that went away before they were read.")
	dDropped       = desc("wal_dropped_events_total", "Unsent rows deleted by queue.when-full: drop-oldest (full) or queue.max-age-ms (age), since the WAL file was created.", "reason")
	dDroppedBytes  = desc("wal_dropped_bytes_total", "Payload bytes of the rows counted by edge_agent_wal_dropped_events_total.", "reason")
	dBackpressure  = desc("backpressure_active", "1 while reading is paused because the queue is above queue.max-bytes.")
	dFiltered      = desc("input_events_filtered_total", "Events an input's include-lines/exclude-lines dropped (their positions still advance).", "input")
	dRestarts      = desc("input_restarts_total", "Restarts of a process an input reads from (journald: journalctl) after it exited or hung.", "input")
	dInputDropped  = desc("input_dropped_total", "Messages an input dropped before the WAL, by reason (queue_full: a UDP syslog input's queue was full).", "input", "reason")
	dInputConns    = desc("input_connections", "Connections open to an input that listens (syslog over TCP/TLS).", "input")
	dParseErrors   = desc("input_parse_errors_total", "Messages an input delivered raw because they did not parse.", "input")
	dReloads       = desc("config_reloads_total", "Configuration reloads by result.", "result")
	dThrottled     = desc("send_throttled_seconds_total", "Time the sender waited for the send-rate cap (output.rate-limit) before sending.")
	dBuildInfo     = desc("build_info", "Always 1; the labels name the build.", "version", "commit")
	dConnection    = desc("output_connection_state", "1 for the output's connection state (what the last send found), 0 for the others.", "state")
	// The endpoints of output.endpoints, one series each; absent with a
	// single endpoint. output_connection_state stays the agent's as a
	// whole (what the last send found, whichever endpoint took it), so
	// alerts on it mean the same with a list.
	dEndpointState    = desc("output_endpoint_state", "1 for each endpoint's connection state (what its last send or probe found), 0 for the others; only with output.endpoints.", "endpoint", "state")
	dEndpointActive   = desc("output_endpoint_active", "1 while the endpoint is sent to (failover: the active one; spread: every endpoint up).", "endpoint")
	dEndpointSent     = desc("output_endpoint_batches_sent_total", "Batch lines written to the endpoint, resends included.", "endpoint")
	dEndpointReceived = desc("output_endpoint_batches_received_total", "Batches the endpoint answered RECEIVED.", "endpoint")
	dEndpointSwitches = desc("output_endpoint_switches_total", "Times failover made the endpoint the active one.", "endpoint")
	dFSAvail          = desc("wal_filesystem_avail_bytes", "Bytes left to the agent's user on the filesystem holding the WAL.")
	dFSSize           = desc("wal_filesystem_size_bytes", "Size of the filesystem holding the WAL.")
	// A relay's edgesocket input, per token name (names come from the
	// config, so the label values are bounded).
	dRelayConnected = desc("relay_collectors_connected", "Collectors connected to a relay input, per token name.", "input", "name")
	dRelayBatches   = desc("relay_batches_total", "Batches a relay input read from collectors, per token name.", "input", "name")
	dRelayBytes     = desc("relay_bytes_total", "Payload bytes (as sent) a relay input read from collectors, per token name.", "input", "name")
	dRelayStored    = desc("relay_batches_stored_total", "Batches a relay input answered RECEIVED (stored in its queue), per token name.", "input", "name")
	dRelayRefused   = desc("relay_batches_refused_total", "Batches a relay input answered otherwise (QUEUE_FULL, DECODE_FAILED...), per token name.", "input", "name")
)

// connectionStates are the output connection states the agent reports
// (its status' connection): idle before the first send, connected,
// unavailable (the engine cannot be reached), rejected (another collector
// holds the ingress), auth_failed and decrypt_failed (the engine refuses
// the token or the key). Each is exported, so an alert can select a state
// whose series exists before it first holds.
var connectionStates = []string{"idle", "connected", "unavailable", "rejected", "auth_failed", "decrypt_failed"}

// collector reads one Snapshot per scrape: the agent keeps its counters
// anyway, so exporting them costs the hot path nothing.
type collector struct{ o *Options }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dEventsRead, dBytesRead, dEventsAcked, dWALRows, dWALBytes, dWALFileBytes,
		dOldestPending, dBatches, dLatency, dReconnects, dFilesOpen, dTruncated, dLostBytes, dDropped, dDroppedBytes, dBackpressure, dFiltered, dRestarts, dInputDropped, dInputConns, dParseErrors, dReloads, dThrottled, dBuildInfo,
		dConnection, dEndpointState, dEndpointActive, dEndpointSent, dEndpointReceived, dEndpointSwitches, dFSAvail, dFSSize, dRelayConnected, dRelayBatches, dRelayBytes, dRelayStored, dRelayRefused} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.o.Source.Snapshot()
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(dEventsRead, float64(st.EventsRead))
	counter(dEventsAcked, float64(st.Acked))
	gauge(dWALRows, float64(st.Queue.Pending), "pending")
	gauge(dWALRows, float64(st.Queue.Sending), "sending")
	gauge(dWALRows, float64(st.Queue.Dead), "dead")
	gauge(dWALRows, float64(st.Queue.Received), "received")
	gauge(dWALBytes, float64(st.Queue.SizeBytes))
	gauge(dWALFileBytes, float64(st.Queue.FileBytes))
	gauge(dOldestPending, st.Queue.OldestPendingAge.Seconds())
	counter(dBatches, float64(st.Acked), "received")
	counter(dBatches, float64(st.Failed), "failed")
	counter(dBatches, float64(st.Released), "not_sent")
	counter(dReconnects, float64(st.Reconnects))
	counter(dThrottled, st.SendThrottled.Seconds())
	gauge(dBackpressure, b2f(st.Backpressure))
	counter(dDropped, float64(st.Drops.FullRows), "full")
	counter(dDropped, float64(st.Drops.AgeRows), "age")
	counter(dDroppedBytes, float64(st.Drops.FullBytes), "full")
	counter(dDroppedBytes, float64(st.Drops.AgeBytes), "age")
	counter(dReloads, float64(st.ConfigReloads.OK), "success")
	counter(dReloads, float64(st.ConfigReloads.Failed), "failure")
	gauge(dBuildInfo, 1, c.o.Version, c.o.Commit)
	for _, s := range connectionStates {
		gauge(dConnection, b2f(st.Connection == s), s)
	}
	if st.Connection != "" && !slices.Contains(connectionStates, st.Connection) {
		gauge(dConnection, 1, st.Connection)
	}
	for _, e := range st.Endpoints {
		for _, s := range connectionStates {
			gauge(dEndpointState, b2f(e.State == s), e.Endpoint, s)
		}
		gauge(dEndpointActive, b2f(e.Active), e.Endpoint)
		counter(dEndpointSent, float64(e.Sent), e.Endpoint)
		counter(dEndpointReceived, float64(e.Received), e.Endpoint)
		counter(dEndpointSwitches, float64(e.Switches), e.Endpoint)
	}
	if c.o.WALPath != "" {
		if sp, ok := fsspace.Of(c.o.WALPath); ok {
			gauge(dFSAvail, float64(sp.Avail))
			gauge(dFSSize, float64(sp.Size))
		}
	}

	h := st.SendLatency
	buckets := make(map[float64]uint64, len(h.Bounds))
	for i, b := range h.Bounds {
		buckets[b.Seconds()] = h.Counts[i]
	}
	ch <- prometheus.MustNewConstHistogram(dLatency, h.Count, h.Sum.Seconds(), buckets)

	// The input's own figures only when it reports them: a missing series
	// says "unknown", a 0 would say "nothing".
	if in := st.Input; in != nil {
		counter(dBytesRead, float64(in.BytesRead))
		gauge(dFilesOpen, float64(in.FilesOpen))
		counter(dTruncated, float64(in.TruncatedLines))
		counter(dLostBytes, float64(in.LostBytes))
	}
	for _, in := range st.Inputs {
		if in.Stats != nil {
			counter(dFiltered, float64(in.Stats.Filtered), in.ID)
			counter(dRestarts, float64(in.Stats.Restarts), in.ID)
			counter(dInputDropped, float64(in.Stats.DroppedQueueFull), in.ID, "queue_full")
			if in.Type == syslog.TypeName {
				gauge(dInputConns, float64(in.Stats.Connections), in.ID)
				counter(dParseErrors, float64(in.Stats.ParseErrors), in.ID)
			}
		}
		for _, t := range in.PeerTotals {
			gauge(dRelayConnected, float64(t.Connected), in.ID, t.Name)
			counter(dRelayBatches, float64(t.Batches), in.ID, t.Name)
			counter(dRelayBytes, float64(t.Bytes), in.ID, t.Name)
			counter(dRelayStored, float64(t.Received), in.ID, t.Name)
			counter(dRelayRefused, float64(t.Refused), in.ID, t.Name)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// newRegistry holds the agent's collector and the Go and process ones.
func newRegistry(o *Options) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{o: o}, processorsCollector{o: o}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
