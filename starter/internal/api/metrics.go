package api

import (
	"slices"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/fsspace"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(metricPrefix+name, help, labels, nil)
}

var (
	dEventsRead    = desc("events_read_total", "Events the input returned (lines or multiline groups).")
	dEventsAcked   = desc("events_acked_total", "Events the engine acknowledged (RECEIVED).")
	dWALRows       = desc("wal_rows", "Rows in the queue by status.", "status")
	dWALBytes      = desc("wal_bytes", "Payload bytes queued: the figure compared with queue.max-bytes.")
	dWALFileBytes  = desc("wal_file_bytes", "Size of the WAL file (bbolt never shrinks it).")
	dOldestPending = desc("oldest_pending_age_seconds", "Age of the oldest PENDING row; 0 when none.")
	dLaneRows      = desc("lane_rows", "Due PENDING rows per priority lane (queue.lanes, queue.drain: newest-first).", "lane")
	dLaneOldest    = desc("lane_oldest_age_seconds", "Age of the oldest due PENDING row per lane; 0 when none.", "lane")
	dLaneBytes     = desc("lane_bytes", "Payload bytes of the due PENDING rows per lane.", "lane")
	dBatches       = desc("send_batches_total", "Batches (one WAL row each) by what the engine made of them.", "result")
	dLatency       = desc("send_latency_seconds", "Duration of one send to the engine (one job of rows, until every result is in).")
	dFsync         = desc("wal_fsync_seconds", "Disk time of one WAL commit with queue.fsync on: its page writes and fdatasyncs.")
	dGroupMax      = desc("wal_commit_group_max_events", "The most events a WAL commit group grows to now (queue.fsync-share, queue.group-max-bytes).")
	dReconnects    = desc("reconnects_total", "Sessions authenticated with the engine after an earlier one was lost.")
	dDropped       = desc("wal_dropped_events_total", "Unsent rows deleted by queue.when-full: drop-oldest (full) or queue.max-age-ms (age), since the WAL file was created.", "reason")
	dDroppedBytes  = desc("wal_dropped_bytes_total", "Payload bytes of the rows counted by edge_agent_wal_dropped_events_total.", "reason")
	dBackpressure  = desc("backpressure_active", "1 while reading is paused because the queue is above queue.max-bytes.")
	dReloads       = desc("config_reloads_total", "Configuration reloads by result.", "result")
	dThrottled     = desc("send_throttled_seconds_total", "Time the sender waited for the send-rate cap (output.rate-limit) before sending.")
	dBuildInfo     = desc("build_info", "Always 1; the labels name the build.", "version", "commit")
	// output_connection_state is the agent's as a whole (what the last
	// send found, whichever endpoint of a list took it), so alerts on it
	// mean the same with a list; the output describes its endpoints.
	dConnection = desc("output_connection_state", "1 for the output's connection state (what the last send found), 0 for the others.", "state")
	dFSAvail    = desc("wal_filesystem_avail_bytes", "Bytes left to the agent's user on the filesystem holding the WAL.")
	dFSSize     = desc("wal_filesystem_size_bytes", "Size of the filesystem holding the WAL.")
)

// collector reads one Snapshot per scrape: the agent keeps its counters
// anyway, so exporting them costs the hot path nothing. It is an unchecked
// collector (Describe sends nothing): the inputs'
// series are known only from their descriptions at scrape time. The
// registry still checks at each scrape that the series of one name agree.
type collector struct{ o *Options }

// Describe sends nothing: the collector is unchecked.
func (c collector) Describe(chan<- *prometheus.Desc) {}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.o.Source.Snapshot()
	c.collectAgent(ch, st)
	collectInputs(ch, st)
	collectOutput(ch, st)
}

// collectAgent exports the agent's own counters.
func (c collector) collectAgent(ch chan<- prometheus.Metric, st agent.Status) {
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
	for _, l := range st.Queue.Lanes {
		gauge(dLaneRows, float64(l.Rows), l.Name)
		gauge(dLaneOldest, l.OldestAge.Seconds(), l.Name)
		gauge(dLaneBytes, float64(l.Bytes), l.Name)
	}
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
	states := output.ConnectionStates()
	for _, s := range states {
		gauge(dConnection, b2f(st.Connection == s), s)
	}
	if st.Connection != "" && !slices.Contains(states, st.Connection) {
		gauge(dConnection, 1, st.Connection)
	}
	if c.o.WALPath != "" {
		if sp, ok := fsspace.Of(c.o.WALPath); ok {
			gauge(dFSAvail, float64(sp.Avail))
			gauge(dFSSize, float64(sp.Size))
		}
	}

	if g := st.Queue.Commit.GroupCeiling; g > 0 {
		gauge(dGroupMax, float64(g))
	}
	ch <- constHistogram(dLatency, st.SendLatency)
	ch <- constHistogram(dFsync, st.FsyncLatency)
}

func constHistogram(d *prometheus.Desc, h agent.Histogram) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	for i, b := range h.Bounds {
		buckets[b.Seconds()] = h.Counts[i]
	}
	return prometheus.MustNewConstHistogram(d, h.Count, h.Sum.Seconds(), buckets)
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
	reg.MustRegister(collector{o: o}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
