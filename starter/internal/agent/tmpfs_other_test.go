//go:build !linux

package agent

import "testing"

func smallDisk(t *testing.T, _ int) string {
	t.Skip("the full-disk scenario mounts a Linux tmpfs")
	return ""
}

func fillDisk(*testing.T, string) string { return "" }
