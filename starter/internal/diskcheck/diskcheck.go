// Package diskcheck measures what the disk under the queue directory
// costs the WAL, for `edge-agent check disk`: the latency of a small
// write followed by fdatasync, which every WAL commit pays twice (its
// pages, then its meta page), and what that means for throughput and
// flash wear.
package diskcheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// PageSize is what each measured write writes: one WAL page.
const PageSize = 4096

// Result is one measurement: every sample's latency (a page write and its
// fdatasync), in the order taken.
type Result struct {
	Dir     string
	Samples []time.Duration
}

// Median is the median sample; 0 without samples.
func (r Result) Median() time.Duration { return r.quantile(0.5) }

// Max is the slowest sample.
func (r Result) Max() time.Duration { return r.quantile(1) }

// P90 is the 90th percentile sample.
func (r Result) P90() time.Duration { return r.quantile(0.9) }

func (r Result) quantile(q float64) time.Duration {
	if len(r.Samples) == 0 {
		return 0
	}
	s := slices.Clone(r.Samples)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

// Measure writes n pages, each followed by fdatasync, to a temporary file
// in dir, and removes the file. It stops early, with at least one sample,
// once budget has passed (a slow SD card must not hold the check for
// minutes) or ctx is done. The file is created next to the WAL so that
// it meets the same filesystem and device.
func Measure(ctx context.Context, dir string, n int, budget time.Duration) (res Result, err error) {
	res.Dir = dir
	f, err := os.CreateTemp(dir, ".edge-agent-disk-check-*")
	if err != nil {
		return res, fmt.Errorf("create a test file in the queue directory %s: %w (check that it exists and the agent's user may write there)", dir, err)
	}
	defer func() {
		cerr := f.Close()
		rerr := os.Remove(f.Name())
		if err == nil {
			err = errors.Join(cerr, rerr)
		}
	}()
	page := make([]byte, PageSize)
	start := time.Now()
	for i := range n {
		if i > 0 && (time.Since(start) >= budget || ctx.Err() != nil) {
			break
		}
		page[0] = byte(i)
		t := time.Now()
		if _, err := f.WriteAt(page, int64(i%64)*PageSize); err != nil {
			return res, fmt.Errorf("write test file %s: %w", f.Name(), err)
		}
		if err := datasync(f); err != nil {
			return res, fmt.Errorf("fdatasync test file %s: %w", f.Name(), err)
		}
		res.Samples = append(res.Samples, time.Since(t))
	}
	return res, nil
}
