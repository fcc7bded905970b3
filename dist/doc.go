// Package dist assembles edge-agent release tarballs:
// edge-agent-<version>-<os>-<arch>.tar.gz holding bin/, config/, data/, log/,
// README.md, LICENSE and a systemd unit, with SHA256SUMS beside it.
//
// Tarballs are reproducible: entries are sorted, owned by 0:0, stamped with
// SOURCE_DATE_EPOCH, and gzip carries no name or time, so two builds of the
// same commit with the same toolchain are byte-identical (a test checks it).
//
// The systemd unit (packaging/edge-agent.service) is checked with systemd's
// own tools when they are installed: systemd-analyze verify finds no unknown
// setting, and systemd-analyze security rates its exposure "OK" or better.
package dist
