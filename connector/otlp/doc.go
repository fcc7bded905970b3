// Package otlp is the `type: otlp` input: OpenTelemetry logs over OTLP,
// HTTP (POST /v1/logs, protobuf or JSON) and gRPC (LogsService/Export),
// decoded with the official protobuf definitions
// (go.opentelemetry.io/proto/otlp). Each log record is one event
// (mapping.go).
//
// Contract:
//
//   - An export succeeds (HTTP 200, gRPC OK) only once every record it
//     kept is committed to the WAL (input.Acker's Committed, through
//     connector/internal/pushq). A record whose event is over
//     max-record-bytes is rejected and reported in partial_success; the
//     others are kept.
//   - Backpressure: an export that does not fit the queue
//     (max-pending-bytes) is refused with the retryable answers OTLP
//     defines: HTTP 429 with Retry-After, gRPC UNAVAILABLE with RetryInfo.
//     OTLP exporters retry them; nothing is dropped silently.
//   - A request that does not decode is HTTP 400 / gRPC INVALID_ARGUMENT
//     (not retried by exporters); over max-body-bytes, HTTP 413 /
//     gRPC RESOURCE_EXHAUSTED.
//   - Input positions: none. Exporters resend what was not answered.
package otlp
