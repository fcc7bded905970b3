//go:build !linux

package wal

import (
	"errors"

	bolt "go.etcd.io/bbolt"
)

// dropResident is Linux-only (resident_linux.go): elsewhere the mapped
// pages stay resident until the kernel reclaims them.
func dropResident(*bolt.DB, int64) error { return errors.ErrUnsupported }
