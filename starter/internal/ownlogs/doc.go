// Package ownlogs ships the agent's own log records to the OTLP/HTTP logs
// endpoint an OpAMP server offers (own_logs connection settings).
//
// Contract:
//
//   - The Shipper is a sink of the agent's log hub, attached only while an
//     endpoint is set: Offer never blocks; a record that finds the queue
//     full is dropped and counted.
//   - One goroutine (Run) posts batches as ExportLogsServiceRequest
//     protobuf; a failed post is retried with a growing delay, and only
//     the first failure after a success and the recovery are logged.
//   - Its logger must be one whose records are never shipped (the self
//     package's Unshipped): a failure to ship own logs never produces
//     own logs to ship.
package ownlogs
