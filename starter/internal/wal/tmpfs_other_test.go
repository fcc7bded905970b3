//go:build !linux

package wal

import "testing"

func onTmpfs(string) bool { return false }

func smallDisk(t *testing.T, _ int) string {
	t.Skip("the full-disk cases mount a Linux tmpfs")
	return ""
}

func fillDisk(*testing.T, string) string { return "" }
