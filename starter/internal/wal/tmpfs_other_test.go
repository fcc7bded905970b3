//go:build !linux

package wal

func onTmpfs(string) bool { return false }
