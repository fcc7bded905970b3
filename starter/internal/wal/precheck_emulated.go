//go:build emulated

package wal

import "os"

// Built only with -tags emulated, by `make test-cross`: its test binaries
// run under a user-mode emulator (qemu-aarch64-static) and no binfmt
// handler is assumed, so the kernel cannot start this binary again for the
// damage check; the child starts through the emulator named by
// EDGE_AGENT_TEST_EMULATOR instead (unset: directly, as shipped).
func init() { checkLauncher = os.Getenv("EDGE_AGENT_TEST_EMULATOR") }
