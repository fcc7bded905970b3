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
// The server only reads: it calls the agent's Snapshot at each request,
// so nothing on the agent's hot path knows it exists. When http.token is
// set, every request needs "Authorization: Bearer <token>", compared in
// constant time.
package api
