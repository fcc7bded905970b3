//go:build !linux

package disktest

import "testing"

func small(tb testing.TB, _ int) string {
	tb.Skip("the full-disk cases mount a Linux tmpfs")
	return ""
}

func fill(testing.TB, string) string { return "" }
