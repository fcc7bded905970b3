// Package e2e is the end-to-end suite of edge-agent. It has no library
// code: its tests build the real edge-agent and edgesocket-receiver
// binaries once (TestMain), run them as processes in temporary install roots
// with a generated agent.yaml, and check the agent's delivery promise:
// every line written to a watched file is delivered at least once, and
// duplicates appear only after a failure and are counted.
//
// Rules the tests keep: loopback only; every wait a bounded poll on a
// condition, never a sleep; every process a test starts is stopped by pid
// in t.Cleanup (including agents detached by `start --background`, found
// through their pid file). A server binds a port the kernel picks and
// reports it (the receiver prints its bound address); where a port must be
// named before its server runs (an engine that comes up after the agent,
// the agent's http.listen, which its db commands read) the test holds the
// port bound until then (holdPort) and retries a bind that still fails,
// bounded.
//
// Run with `go test ./...` in this folder; `-short` skips the suite.
//
// The suite runs on unix only (every test file says so in its build
// line): it stops, reloads and kills the agent with signals and reads its
// exit the way a unix service manager does. On Windows the package still
// builds and vets, which is what make test checks there.
package e2e
