// Package upgrade replaces the agent's binary with one the OpAMP server
// offers, and goes back to the previous one when the new one does not
// prove healthy.
//
// Contract:
//   - Off unless management.opamp.packages.public-key is set (local
//     config only). An offer is trusted only when its ed25519 signature
//     verifies against that key: the signature covers the version, the
//     SHA-256 of the file and whether a downgrade is allowed (Message), so
//     neither can be changed without the private key.
//   - Layout, all under the writable state directory (the folder of the
//     id file: the install root of a tarball, /var/lib/edge-agent of a
//     package), never under the read-only bin/:
//     versions/state.json          which version runs, which is kept for a
//     rollback, the trial under way and the last install's fate;
//     versions/<v>/bin/edge-agent  a staged version;
//     versions/download/<sha256>.part  a download under way (resumed with
//     an HTTP Range request after a cut or a restart).
//   - The installed binary (bin/edge-agent, what systemd or the operator
//     starts) is the launcher: `start` reads state.json and execs the
//     version it names (same pid: systemd, the pid file and `stop` keep
//     tracking it), or supervises the trial of a new one (Supervise).
//     state.json is replaced atomically (write, fsync, rename): a kill -9
//     at any point leaves either the old or the new state, each naming a
//     binary that exists.
//   - A new version runs first as a trial: a child of the launcher, with
//     EDGE_AGENT_UPGRADE_TRIAL set. It confirms itself once healthy
//     (state.json: current = new, previous = old) and exits; the launcher
//     then execs it for good. A trial that exits before it confirmed, or
//     is not healthy within the deadline, or was started MaxTrialStarts
//     times without confirming (a crash loop through kill -9 or reboots),
//     is rolled back: state.json names the old version again, with the
//     reason, reported to the server as InstallFailed.
//   - WAL across versions: no build converts a WAL in place (the WAL
//     refuses a file of another schema version and changes nothing in
//     it). A build that someday converts must do it only outside a trial
//     (InTrial false), so a newer WAL the old binary cannot read is
//     never written before the new version is confirmed.
//   - Two versions are kept: the one running and the previous one; older
//     staged versions are removed once a new one is confirmed.
package upgrade
