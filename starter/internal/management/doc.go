// Package management keeps the agent under fleet management over OpAMP
// (the Open Agent Management Protocol of OpenTelemetry), on opamp-go's
// client.
//
// Contract:
//   - Settings (agent.yaml's management section) are validated here and
//     always come from the local file: a remote config can neither change
//     how the agent reaches its server nor where its WAL lives.
//   - Start never blocks: the client connects on its own goroutines, and a
//     server that is down is retried with the shared jittered backoff
//     (transport/backoff), one opamp-go session per attempt, while the
//     agent ships as usual.
//   - What it reports is read from the agent each time: the description
//     (service.name, service.instance.id = the instance uid,
//     service.version; host, OS, architecture, agent id, input paths and
//     output endpoint), health (agent.Status.Health: the facts of /healthz,
//     per component: input, wal, output) on every change and every
//     heartbeat, and the effective config with its secrets redacted.
//   - A remote config is the config map entry "agent.yaml" (text/yaml). It
//     is reported APPLYING, handed to the Applier (package daemon's
//     reloader: the checks of `config check`, then agent.Reload), and
//     reported APPLIED, or FAILED with the problems as `config check`
//     words them; a failed one changes nothing. An applied one is saved
//     by Store (one JSON file, written atomically, mode 0600) for the next
//     start. An empty config map withdraws it: the agent goes back to its
//     local file.
//   - Capabilities are only what is implemented: AcceptsRemoteConfig and
//     ReportsRemoteConfig only with an Applier
//     (accept-remote-config: true), AcceptsRestartCommand only where the
//     agent can restart in place (Options.Restart; not on Windows),
//     AcceptsPackages and ReportsPackageStatuses only with Packages
//     (management.opamp.packages.public-key set, and a restart in place),
//     AcceptsOpAMPConnectionSettings with an OpAMPStore,
//     AcceptsOtherConnectionSettings with a ConnectionApplier (the
//     "edgesocket" connection: the output), ReportsConnectionSettingsStatus
//     with either, and the custom capability opamptask.Capability with
//     Tasks. ReportsOwnMetrics, ReportsOwnTraces and ReportsOwnLogs are
//     not: own telemetry settings are not supported.
//   - OpAMP connection settings follow the OpAMP rule: a second session
//     with them connects beside the one in force (OpAMPConnectTimeout),
//     and only once it is connected does it take over and are they saved
//     (OpAMPStore); at the next start they replace management.opamp's
//     endpoint, headers and TLS files.
//   - Operator tasks run one at a time off the library's goroutines, at
//     most a few queued (more are answered busy); each request gets one
//     result message, an attachment (the diagnostics bundle) goes first
//     in chunk messages, bounded by opamptask.MaxAttachment.
//   - A package offer's top-level package is handed to Packages (package
//     upgrade: signature, download, trial, rollback); its statuses are
//     reported as it reports them, and at start the last offer's fate.
//
// Nothing below imports this package: it observes the agent (Source) and
// changes it only through the Applier.
package management
