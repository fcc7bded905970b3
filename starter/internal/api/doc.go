// Package api is the agent's local HTTP server and the client the CLI uses
// to read it.
//
// Endpoints (see docs/metrics.md for every metric):
//
//	/metrics       Prometheus text: the agent's counters, the Go and process collectors
//	/healthz       200 while the loop turns, the WAL is writable and the engine accepts us; 503 and the reason otherwise
//	/readyz        200 once the agent is ready (BOOTSTRAP_READY), 503 before and while stopping
//	/debug/status  the Status document as JSON (no secrets)
//	/debug/pprof/  Go's profiler, only with http.pprof: true
//
// and, for `edge-agent db` on a running agent (package dbview's documents):
//
//	GET  /db/info, /db/summary      the WAL's path, size, counts, row ids; per status count and oldest row
//	GET  /db/rows                   one page of rows without payloads (?status=DEAD&after_id=N&limit=N, limit 0: all)
//	GET  /db/rows/{id}              one row with its payload (404 when none)
//	GET  /db/positions              saved input positions (?source_id=)
//	GET  /db/verify                 checksums, indexes, counters and pages (?max_problems=N)
//	POST /db/retry-dead, /db/purge-dead   the change, or with ?dry_run=true what it would touch
//	POST /db/reread                 ?path=…&offset=N&input=ID: a file input reads the file again from offset
//
// A failed /db/ request answers {"error": "..."}.
//
// The status endpoints only read: they call the agent's Snapshot at each
// request, so nothing on the agent's hot path knows they exist. /db/ reads
// run View on the agent's own WAL, beside its commits; the two changes
// are handed to the scheduler loop, the WAL's only writer, which makes
// them between two of its own transactions.
//
// /healthz, /readyz and /metrics are open unless http.token is set. Every
// other route needs "Authorization: Bearer <token>" with http.token or the
// token the agent writes at each start to edge-agent.api-token beside its
// pid file (mode 0600), and a Host naming this server and no foreign
// Origin, so a web page cannot reach it by DNS rebinding (see guard).
package api
