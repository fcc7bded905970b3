// Package paths finds the install root and the files that live under it
// (config, pid file, id file, logs), so that `start` and `db` resolve every
// relative path the same way whatever the current directory (the Java
// launcher resolves them differently, which can split state in two).
//
// Every function takes the environment as a getenv func and touches no
// global state; the environment variables honoured are EDGE_AGENT_HOME,
// EDGE_AGENT_CONFIG, EDGE_AGENT_PID_FILE, EDGE_AGENT_ID_FILE and
// EDGE_AGENT_LOG_DIR, the Java agent's names. A package that keeps the
// agent's state outside the install root ships <home>/edge-agent.paths
// (LoadDefaults) with the same names as defaults under the environment.
package paths
