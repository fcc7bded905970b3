// Package console is a transport.Sender that writes events instead of
// sending them: the agent's `output.type: console`, for trying a
// configuration without an engine or for piping events into another tool.
//
// Each payload is written as one line (NDJSON) that parses as JSON: the
// file input's events are already one compact JSON object, or one array
// for a multiline group, and are written as they are; a payload that is
// not clean JSON (text, NUL, invalid UTF-8, as a RAW relay may pass on)
// is written as a JSON string (AppendJSON). So `edge-agent start | jq .`
// works whatever the events hold. Only the console line is affected:
// what a transport output sends is not.
// Lines are gathered in a buffer and written once per Send, so a busy agent
// makes one write call per batch of events, not one per event.
//
// The writer is given to New (the command line passes its stdout); nothing
// here touches os.Stdout, so the agent's logs, which go to stderr or a
// file, never mix with the events.
//
// A failed write (EPIPE once the reading process has exited, a full disk
// behind a redirection) ends Send with an error wrapping
// transport.ErrUnavailable: the batches the writer did not take are
// NotSent, stay in the WAL and are written again later. A line the writer
// took only part of is finished first on the next Send, so the stream never
// carries a torn line; its batch is written again whole (at least once).
package console
