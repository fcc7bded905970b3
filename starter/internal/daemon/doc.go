// Package daemon is edge-agent's composition root: Run turns what the
// command line resolved (Options) into a running agent and back into an
// exit code.
//
// Run, in order: raises the open-files limit and tunes the GC; loads
// agent.yaml, and over it the remote config last applied when management
// accepts remote configs; opens the log; takes the pid file (one agent
// per install root, exitcode.InUse otherwise); resolves the ids and the
// instance uid; builds the agent (package agent); starts the OpAMP client
// (package management) and the HTTP API (package api); runs the agent
// until ctx is done, a stop request, or a fatal error; then stops the API
// and management, and releases the pid file.
//
// Requests reach a run whatever asked: SIGTERM and SIGINT stop it (a second
// one exits at once through Options.Exit), SIGHUP reloads it; on Windows
// two named events (EventNames) carry stop and reload, and a service is
// stopped through ctx. The OpAMP server's restart ends Run with
// ErrRestart; the caller starts the same command again.
//
// Reloads, local (SIGHUP) and remote (OpAMP), go through one reloader that
// serialises them: the config in force is the local file, or the remote
// config over it but for management and queue.path. A config that does not
// load changes nothing; every problem is logged (local) or reported to the
// server (remote). --log-level wins over log.level at every reload.
//
// Run's errors: nil after a clean stop, ErrRestart, or a *Failure whose
// Code is the exit code. A *Failure has been reported already: on stderr
// and in the log (BOOTSTRAP_FAILED before the agent was ready), as one
// line through Options.PrintError when detached, and to Options.OnFailure.
//
// Concurrency: Run blocks; one Run per process, since it owns the process's
// signals, its open-files limit and GC settings. Options' callbacks may be
// called from Run's goroutines: OnReady once, from the agent's loop.
package daemon
