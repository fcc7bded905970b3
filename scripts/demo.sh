#!/usr/bin/env bash
# make demo: runs the agent end to end on this machine.
#  1. starts bin/edgesocket-receiver on 127.0.0.1 (it stands in for the
#     SeaTunnel engine's EdgeSocket source),
#  2. writes a log file (with a multiline stack trace) into a demo install root,
#  3. starts bin/edge-agent in the foreground of a background job,
#  4. appends more lines and rotates the file while the agent runs,
#  5. waits until the receiver has every record, prints a few, stops both by PID.
# Settings (environment):
#   DEMO_PORT       receiver port on 127.0.0.1 (default 19999)
#   DEMO_HTTP_PORT  the agent's local HTTP API port (default 19466)
#   DEMO_DIR        demo install root, emptied first (default build/demo)
#   DEMO_BIN        folder holding edge-agent and edgesocket-receiver (default bin)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DEMO=${DEMO_DIR:-$ROOT/build/demo}
BIN=${DEMO_BIN:-$ROOT/bin}
PORT=${DEMO_PORT:-19999}
HTTP_PORT=${DEMO_HTTP_PORT:-19466}
TOKEN=demo-token
for b in edge-agent edgesocket-receiver; do
	if [ ! -x "$BIN/$b" ]; then
		echo "demo: $BIN/$b not found: run 'make build' first, or 'make demo' which does" >&2
		exit 1
	fi
done
rm -rf "$DEMO"
mkdir -p "$DEMO/bin" "$DEMO/config" "$DEMO/logs"
cp "$BIN/edge-agent" "$BIN/edgesocket-receiver" "$DEMO/bin/"

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

cat >"$DEMO/config/agent.yaml" <<YAML
agent:
  flush-interval-ms: 200
input:
  paths: ["$DEMO/logs/*.log"]
  read-from-beginning: true
  glob-scan-interval-ms: 500
  multiline:
    # A dated line starts a new event; the stack trace lines join it.
    pattern: '^\d{4}-\d{2}-\d{2}'
    match: after
    negate: false
    flush-idle-timeout-ms: 500
output:
  type: transport
  endpoint: 127.0.0.1:$PORT
  token: \${EDGE_AGENT_TOKEN}
  max-in-flight: 64
http:
  listen: 127.0.0.1:$HTTP_PORT
YAML

# 1000 single-line events and one 4-line stack trace = 1001 events.
for i in $(seq 1 1000); do
	printf '2026-11-30 12:00:00 INFO [demo] request handled seq=%06d status=200\n' "$i"
done >"$DEMO/logs/app.log"
printf '2026-11-30 12:00:01 ERROR [demo] request failed\njava.lang.IllegalStateException: boom\n\tat demo.Main.run(Main.java:42)\n\tat demo.Main.main(Main.java:7)\n' >>"$DEMO/logs/app.log"

echo "demo: install root $DEMO (DEMO_DIR), receiver on 127.0.0.1:$PORT (DEMO_PORT), agent API on 127.0.0.1:$HTTP_PORT (DEMO_HTTP_PORT)"
"$DEMO/bin/edgesocket-receiver" --listen "127.0.0.1:$PORT" --token "$TOKEN" \
	--format envelope --out "$DEMO/received.ndjson" --addr-file "$DEMO/receiver.addr" 2>"$DEMO/receiver.err" &
receiver=$!
pids+=($receiver)
# The receiver writes its address once it listens; if it exits first (the
# port is taken, say), its own error says why, and nothing else is started.
for _ in $(seq 1 100); do
	[ -s "$DEMO/receiver.addr" ] && break
	if ! kill -0 "$receiver" 2>/dev/null; then
		echo "demo: FAILED: the receiver could not start on 127.0.0.1:$PORT (set DEMO_PORT to use another port):" >&2
		cat "$DEMO/receiver.err" >&2
		exit 1
	fi
	sleep 0.05
done
if [ ! -s "$DEMO/receiver.addr" ]; then
	echo "demo: FAILED: the receiver did not listen within 5s; its output:" >&2
	cat "$DEMO/receiver.err" >&2
	exit 1
fi

EDGE_AGENT_HOME="$DEMO" EDGE_AGENT_TOKEN="$TOKEN" "$DEMO/bin/edge-agent" start --config "$DEMO/config/agent.yaml" \
	>"$DEMO/agent.out" 2>&1 &
agent=$!
pids+=($agent)

# While the agent runs: rotate the file and write 500 more lines to the new one.
sleep 1
mv "$DEMO/logs/app.log" "$DEMO/logs/app.log.1"
for i in $(seq 1001 1500); do
	printf '2026-11-30 12:00:02 INFO [demo] request handled seq=%06d status=200\n' "$i"
done >"$DEMO/logs/app.log"

want=1501
for _ in $(seq 1 300); do
	got=$(wc -l <"$DEMO/received.ndjson" 2>/dev/null || echo 0)
	[ "$got" -ge "$want" ] && break
	if ! kill -0 "$agent" 2>/dev/null; then
		echo "demo: FAILED: the agent exited (set DEMO_HTTP_PORT if 127.0.0.1:$HTTP_PORT is taken); its output:" >&2
		cat "$DEMO/agent.out" >&2
		exit 1
	fi
	sleep 0.1
done
got=$(wc -l <"$DEMO/received.ndjson")
echo "demo: edge-agent status while it runs (the API on 127.0.0.1:$HTTP_PORT also serves /metrics):"
EDGE_AGENT_HOME="$DEMO" EDGE_AGENT_TOKEN="$TOKEN" "$DEMO/bin/edge-agent" status
kill -TERM "$agent"
wait "$agent" || true
echo "demo: receiver got $got records (want $want); first two and the stack trace:"
head -n 2 "$DEMO/received.ndjson" | cut -c1-240
grep -m1 IllegalStateException "$DEMO/received.ndjson" | cut -c1-400 || true
echo "demo: WAL summary after the run:"
EDGE_AGENT_HOME="$DEMO" EDGE_AGENT_TOKEN="$TOKEN" "$DEMO/bin/edge-agent" db wal-summary
echo "demo: where things are:"
echo "  received records: $DEMO/received.ndjson ($got records, one JSON envelope per line)"
echo "  agent log:        $DEMO/log/edge-agent.log"
echo "  agent stdout:     $DEMO/agent.out"
echo "  WAL:              $DEMO/data/wal.db"
echo "  config:           $DEMO/config/agent.yaml"
if [ "$got" -lt "$want" ]; then
	echo "demo: FAILED: the receiver got $got of $want records" >&2
	exit 1
fi
echo "demo: OK: $got of $want records delivered"
