package dist

import (
	"bytes"
	"fmt"
	"strings"
)

// Target is one GOOS/GOARCH (and, for arm, GOARM) to release.
type Target struct {
	GOOS   string
	GOARCH string
	// GOARM is the ARM architecture version of a GOARCH=arm build: "6"
	// (ARMv6 with VFP: Raspberry Pi 1 and Zero) or "7" (ARMv7 and later).
	GOARM string
	// Optional targets whose binaries do not compile are skipped and
	// reported in Result.Skipped instead of failing the whole release.
	Optional bool
}

// Arch names the CPU in artifact names: the GOARCH, or armv6/armv7.
func (t Target) Arch() string {
	if t.GOARCH == "arm" {
		return "armv" + t.GOARM
	}
	return t.GOARCH
}

func (t Target) String() string { return t.GOOS + "/" + t.Arch() }

// env is the go command's environment for the target.
func (t Target) env() []string {
	env := []string{"GOOS=" + t.GOOS, "GOARCH=" + t.GOARCH}
	if t.GOARCH == "arm" {
		env = append(env, "GOARM="+t.GOARM)
	}
	return env
}

// ParseTarget reads "os/arch" as String writes it: linux/amd64,
// linux/armv7, windows/amd64.
func ParseTarget(s string) (Target, error) {
	goos, arch, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || goos == "" || arch == "" {
		return Target{}, fmt.Errorf("target %q is not os/arch (such as linux/arm64 or linux/armv7)", s)
	}
	switch arch {
	case "arm":
		return Target{}, fmt.Errorf("target %q: say linux/armv6 or linux/armv7", s)
	case "armv6", "armv7":
		return Target{GOOS: goos, GOARCH: "arm", GOARM: arch[len("armv"):]}, nil
	}
	return Target{GOOS: goos, GOARCH: arch}, nil
}

// defaultTargets are the CPUs released: every linux gateway CPU Go
// supports without cgo that Debian or RPM distributions ship for, and
// Windows on amd64.
func defaultTargets() []Target {
	return []Target{
		{GOOS: "linux", GOARCH: "amd64"},
		{GOOS: "linux", GOARCH: "arm64"},
		{GOOS: "linux", GOARCH: "arm", GOARM: "6"},
		{GOOS: "linux", GOARCH: "arm", GOARM: "7"},
		{GOOS: "linux", GOARCH: "386"},
		{GOOS: "linux", GOARCH: "riscv64"},
		{GOOS: "linux", GOARCH: "ppc64le"},
		{GOOS: "linux", GOARCH: "s390x"},
		{GOOS: "windows", GOARCH: "amd64", Optional: true},
	}
}

// debArch and rpmArch are the architecture names of the target's .deb and
// .rpm, as dpkg and rpm call the CPUs:
//
//	Go          deb       rpm
//	amd64       amd64     x86_64
//	arm64       arm64     aarch64
//	armv6       armel     armv6hl
//	armv7       armhf     armv7hl
//	386         i386      i686
//	riscv64     riscv64   riscv64
//	ppc64le     ppc64el   ppc64le
//	s390x       s390x     s390x
//
// Debian's armhf assumes ARMv7, so the ARMv6 build is its armel package
// (ARMv6 and later only: the build uses VFP); Raspberry Pi OS calls ARMv6
// armhf, and its ARMv6 boards take the armv6 tarball or the armel package
// (docs/install.md). Go's 386 needs SSE2, so i686 for rpm.
func debArch(t Target) string {
	return map[string]string{"amd64": "amd64", "arm64": "arm64", "armv6": "armel", "armv7": "armhf",
		"386": "i386", "riscv64": "riscv64", "ppc64le": "ppc64el", "s390x": "s390x"}[t.Arch()]
}

func rpmArch(t Target) string {
	return map[string]string{"amd64": "x86_64", "arm64": "aarch64", "armv6": "armv6hl", "armv7": "armv7hl",
		"386": "i686", "riscv64": "riscv64", "ppc64le": "ppc64le", "s390x": "s390x"}[t.Arch()]
}

// is32bit: bbolt's map is capped at 2 GiB and queue.max-bytes at 512 MiB.
func (t Target) is32bit() bool { return t.GOARCH == "386" || t.GOARCH == "arm" }

// targetConfig is config/agent.yaml as a target ships it: on 32-bit
// targets queue.max-bytes is their default and limit, 512 MiB, instead of
// 1 GiB, which the agent refuses there. The line must be found exactly
// once: a reworded config fails the release instead of shipping a config
// the agent refuses.
func targetConfig(t Target, src []byte) ([]byte, error) {
	if !t.is32bit() {
		return src, nil
	}
	const old, new = "\n  max-bytes: 1073741824\n", "\n  max-bytes: 536870912\n"
	if n := bytes.Count(src, []byte(old)); n != 1 {
		return nil, fmt.Errorf("dist: config/agent.yaml holds %q %d times, want once", strings.TrimSpace(old), n)
	}
	return bytes.Replace(src, []byte(old), []byte(new), 1), nil
}
