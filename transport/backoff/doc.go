// Package backoff is the one retry pacing of edge-agent: capped exponential
// delays, jittered so that agents cut off together do not come back
// together. The EdgeSocket client's reconnects and RETRY resends, the
// agent's row retries, connection holds and WAL-error retries, and its
// lock waits all take their delays from a Policy, so every retry paces the
// same way and a configured maximum is a maximum everywhere.
package backoff
