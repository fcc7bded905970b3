// Package dist assembles the edge-agent release into one folder:
//
//   - edge-agent-<version>-linux-{amd64,arm64}.tar.gz holding bin/, config/,
//     data/, log/, README.md (the operator guide), LICENSE and a systemd unit;
//   - edge-agent-<version>-windows-amd64.zip, the same with .exe binaries and
//     no unit;
//   - .deb and .rpm for linux amd64 and arm64, built with nfpm as a library:
//     binaries in /opt/edge-agent, config in /etc/edge-agent (kept on
//     upgrade), WAL in /var/lib/edge-agent, logs in /var/log/edge-agent, a
//     unit enabled but not started, and the edge-agent system user;
//   - SHA256SUMS listing every artifact.
//
// Each target's binaries are built once, from their own module (GOWORK=off,
// so nfpm's dependencies here never reach the agent), and shared by its
// archive and packages. Artifacts are reproducible: entries are sorted,
// owned by 0:0 and stamped with SOURCE_DATE_EPOCH, gzip carries no name or
// time, zip entries carry the epoch, and the packages get the epoch as
// their mtime and a fixed build host, so two builds of the same commit with
// the same toolchain are byte-identical (a test checks it).
//
// The systemd unit (packaging/edge-agent.service) is checked with systemd's
// own tools when they are installed: systemd-analyze verify finds no unknown
// setting, and systemd-analyze security rates its exposure "OK" or better.
package dist
