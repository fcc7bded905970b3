//go:build !linux

package wal

import (
	"errors"
	"os"

	bolt "go.etcd.io/bbolt"
)

// dropResident is Linux-only (resident_linux.go): elsewhere the mapped
// pages stay resident until the kernel reclaims them.
func dropResident(*bolt.DB, int64) error { return errors.ErrUnsupported }

// adviseRandom is Linux-only (resident_linux.go).
func adviseRandom(*bolt.DB, int64) error { return errors.ErrUnsupported }

// dropCache is Linux-only (resident_linux.go).
func dropCache(*os.File) error { return errors.ErrUnsupported }

// dropRange is Linux-only (resident_linux.go).
func dropRange(*bolt.DB, *os.File, int64, int64) error { return errors.ErrUnsupported }
