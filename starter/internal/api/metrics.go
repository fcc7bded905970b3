package api

import (
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
	dReloads       = desc("config_reloads_total", "Configuration reloads by result.", "result")
	dBuildInfo     = desc("build_info", "Always 1; the labels name the build.", "version", "commit")
)

// collector reads one Snapshot per scrape: the agent keeps its counters
// anyway, so exporting them costs the hot path nothing.
type collector struct{ o *Options }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dEventsRead, dBytesRead, dEventsAcked, dWALRows, dWALBytes, dWALFileBytes,
		dOldestPending, dBatches, dLatency, dReconnects, dFilesOpen, dTruncated, dLostBytes, dDropped, dDroppedBytes, dBackpressure, dFiltered, dReloads, dBuildInfo} {
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
	gauge(dWALBytes, float64(st.Queue.SizeBytes))
	gauge(dWALFileBytes, float64(st.Queue.FileBytes))
	gauge(dOldestPending, st.Queue.OldestPendingAge.Seconds())
	counter(dBatches, float64(st.Acked), "received")
	counter(dBatches, float64(st.Failed), "failed")
	counter(dBatches, float64(st.Released), "not_sent")
	counter(dReconnects, float64(st.Reconnects))
	gauge(dBackpressure, b2f(st.Backpressure))
	counter(dDropped, float64(st.Drops.FullRows), "full")
	counter(dDropped, float64(st.Drops.AgeRows), "age")
	counter(dDroppedBytes, float64(st.Drops.FullBytes), "full")
	counter(dDroppedBytes, float64(st.Drops.AgeBytes), "age")
	counter(dReloads, float64(st.ConfigReloads.OK), "success")
	counter(dReloads, float64(st.ConfigReloads.Failed), "failure")
	gauge(dBuildInfo, 1, c.o.Version, c.o.Commit)

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
	reg.MustRegister(collector{o: o}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
