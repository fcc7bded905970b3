//go:build !windows

package upgrade

const binaryName = "edge-agent"
