// Package cli is the edge-agent command line: start (foreground or
// --background), stop, status, version, config check and the db tools.
//
// It is the only place that touches the process as a whole: it builds the
// logger (package logging), owns the pid file and signals (package process),
// resolves the install root and every relative path against it (package
// paths), and maps errors to exit codes:
//
//	0  success / running (status)
//	1  failure
//	2  invalid configuration or command-line usage
//	3  not running (status, as LSB init scripts expect)
//	4  the engine refused output.token (AUTH_FAILED)
//	5  the engine could not decrypt (DECRYPT_FAILED)
//	6  another edge-agent uses this install root or data dir
//
// Run is driven entirely by its Env (arguments, environment, standard
// streams, executable path), so tests run commands in-process against temp
// install roots without touching the real environment.
package cli
