//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edge-agent/edge-agent/bench/internal/proc"
)

// boltGroup is the agent's default commit group, agent.bulk-max-size.
const boltGroup = 256

// boltLoop appends n 200-byte records to a fresh bbolt file, boltGroup per
// fsynced transaction, one key per record: what a WAL costs at the least
// with bbolt on this disk. Its own disk writes come from /proc/self/io.
func boltLoop(ctx context.Context, path string, n int, timeout time.Duration) (result, error) {
	res := result{lines: n, bytes: int64(n) * 200, cpu: -1, hwm: -1}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return res, fmt.Errorf("bbolt open %s: %w", path, err)
	}
	defer db.Close()
	before, err := proc.Read(os.Getpid())
	if err != nil {
		return res, err
	}
	val := make([]byte, 200)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	start := time.Now()
	var key [8]byte
	for i := 0; i < n; i += boltGroup {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("bbolt loop after %d of %d records: %w", i, n, err)
		}
		err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("rows"))
			if err != nil {
				return err
			}
			bk.FillPercent = 1 // appends in key order, as the WAL's
			for j := i; j < min(i+boltGroup, n); j++ {
				binary.BigEndian.PutUint64(key[:], uint64(j+1))
				if err := bk.Put(key[:], val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return res, fmt.Errorf("bbolt append: %w", err)
		}
	}
	res.wall = time.Since(start).Seconds()
	after, err := proc.Read(os.Getpid())
	if err != nil {
		return res, err
	}
	res.cpu = after.CPUSeconds - before.CPUSeconds
	res.writeBytes = after.WriteBytes - before.WriteBytes
	res.ok = true
	return res, nil
}
