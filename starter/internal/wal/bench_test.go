package wal

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Benchmarks run with fsync on, on the normal disk (benchDir). Figures are
// rows/s; compare BenchmarkAppend with BenchmarkRawBoltPut at the same group
// size (target: >= 80 %), and BenchmarkClaimAck at the two backlogs
// (target: < 2x apart, heap-KB flat).
//
//	go test -run '^$' -bench . -benchtime 3s -count 3 ./internal/wal/

const benchPayload = 200 // bytes, the mean line size of the bench data set

// benchRoot is a directory on a real disk: fsync on tmpfs costs nothing and
// would flatter every figure. It is os.TempDir unless that is tmpfs, then
// the home directory.
func benchRoot(b *testing.B) string {
	b.Helper()
	root := os.TempDir()
	if onTmpfs(root) {
		home, err := os.UserHomeDir()
		if err != nil {
			b.Skip("temp dir is tmpfs and there is no home dir")
		}
		root = home
	}
	return root
}

// benchDir is a fresh directory under benchRoot, removed after b.
func benchDir(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp(benchRoot(b), "edge-agent-wal-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func payload(i int) []byte {
	p := make([]byte, benchPayload)
	copy(p, fmt.Sprintf(`{"_index":0,"_line":%d,"payload":"`, i))
	for j := 40; j < len(p); j++ {
		p[j] = 'a' + byte(j%26)
	}
	return p
}

func BenchmarkAppend(b *testing.B) {
	for _, group := range []int{1, 64, 256, 1024} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) {
			w, err := Open(Options{Path: filepath.Join(benchDir(b), "wal.db"), Fsync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			rows := make([]NewRow, group)
			for i := range rows {
				rows[i] = NewRow{SourceID: "app", Payload: payload(i)}
			}
			pos := []PositionUpdate{{SourceID: "app", Key: "/var/log/app.log", State: make([]byte, 48)}}
			b.SetBytes(int64(group * benchPayload))
			b.ResetTimer()
			for b.Loop() {
				if err := w.Update(func(tx *Tx) error {
					if _, _, err := tx.Append(rows); err != nil {
						return err
					}
					return tx.SavePositions(pos)
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*group)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkRawBoltPut is the baseline: the same rows and one position put
// straight into bbolt (same open options, default FillPercent), no
// indexes, counters or checksums.
func BenchmarkRawBoltPut(b *testing.B) {
	for _, group := range []int{1, 64, 256, 1024} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) {
			db, err := bolt.Open(filepath.Join(benchDir(b), "raw.db"), 0o600,
				&bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType, InitialMmapSize: initialMmapSize})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			_ = db.Update(func(tx *bolt.Tx) error {
				_, _ = tx.CreateBucket([]byte("rows"))
				_, err := tx.CreateBucket([]byte("pos"))
				return err
			})
			payloads := make([][]byte, group)
			for i := range payloads {
				payloads[i] = payload(i)
			}
			state := make([]byte, 48)
			var seq uint64
			b.SetBytes(int64(group * benchPayload))
			b.ResetTimer()
			for b.Loop() {
				if err := db.Update(func(tx *bolt.Tx) error {
					rb := tx.Bucket([]byte("rows"))
					for _, p := range payloads {
						seq++
						if err := rb.Put(u64key(seq), p); err != nil {
							return err
						}
					}
					return tx.Bucket([]byte("pos")).Put([]byte("/var/log/app.log"), state)
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*group)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkAppendVsRaw alternates one WAL append transaction and one raw
// bbolt transaction of the same rows on the same disk, timing each side
// separately, so that the ratio is not skewed by the disk's fsync latency
// drifting between two separate benchmarks (it does on shared VMs).
func BenchmarkAppendVsRaw(b *testing.B) {
	for _, group := range []int{1, 64, 256, 1024} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) {
			dir := benchDir(b)
			w, err := Open(Options{Path: filepath.Join(dir, "wal.db"), Fsync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			db, err := bolt.Open(filepath.Join(dir, "raw.db"), 0o600,
				&bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType, InitialMmapSize: initialMmapSize})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			_ = db.Update(func(tx *bolt.Tx) error {
				_, _ = tx.CreateBucket([]byte("rows"))
				_, err := tx.CreateBucket([]byte("pos"))
				return err
			})
			rows := make([]NewRow, group)
			for i := range rows {
				rows[i] = NewRow{SourceID: "app", Payload: payload(i)}
			}
			pos := []PositionUpdate{{SourceID: "app", Key: "/var/log/app.log", State: make([]byte, 48)}}
			var seq uint64
			var walTime, rawTime time.Duration
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if err := w.Update(func(tx *Tx) error {
					if _, _, err := tx.Append(rows); err != nil {
						return err
					}
					return tx.SavePositions(pos)
				}); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if err := db.Update(func(tx *bolt.Tx) error {
					rb := tx.Bucket([]byte("rows"))
					for _, r := range rows {
						seq++
						if err := rb.Put(u64key(seq), r.Payload); err != nil {
							return err
						}
					}
					return tx.Bucket([]byte("pos")).Put([]byte(pos[0].Key), pos[0].State)
				}); err != nil {
					b.Fatal(err)
				}
				walTime += mid.Sub(start)
				rawTime += time.Since(mid)
			}
			walRate := float64(b.N*group) / walTime.Seconds()
			rawRate := float64(b.N*group) / rawTime.Seconds()
			b.ReportMetric(walRate, "wal-rows/s")
			b.ReportMetric(rawRate, "raw-rows/s")
			b.ReportMetric(100*walRate/rawRate, "wal-%-of-raw")
		})
	}
}

// backlogs caches the generated backlog files across the repeated calls
// the benchmark framework makes (b.N ramp-up, -count).
var backlogs struct {
	sync.Mutex
	dir   string
	paths map[int]string
}

// backlogWAL returns a WAL file holding n PENDING rows, written with fsync
// off to save time (the measured part reopens it with fsync on).
func backlogWAL(b *testing.B, n int) string {
	backlogs.Lock()
	defer backlogs.Unlock()
	if p, ok := backlogs.paths[n]; ok {
		return p
	}
	if backlogs.dir == "" {
		dir, err := os.MkdirTemp(benchRoot(b), "edge-agent-wal-backlog-")
		if err != nil {
			b.Fatal(err)
		}
		backlogs.dir, backlogs.paths = dir, map[int]string{}
	}
	path := filepath.Join(backlogs.dir, fmt.Sprintf("backlog-%d.db", n))
	w, err := Open(Options{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]NewRow, 4096)
	for i := range rows {
		rows[i] = NewRow{SourceID: "app", Payload: payload(i)}
	}
	for done := 0; done < n; done += len(rows) {
		chunk := rows[:min(len(rows), n-done)]
		if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(chunk); return err }); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	backlogs.paths[n] = path
	return path
}

// BenchmarkClaimAck measures the steady state of a loaded agent: each
// transaction claims and acks (retention 0) the 256 oldest rows and appends
// 256 new ones, so the backlog stays at its size. Cost must not depend on
// the backlog, and neither must the Go heap.
func BenchmarkClaimAck(b *testing.B) {
	const group = 256
	for _, backlog := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("backlog=%d", backlog), func(b *testing.B) {
			w, err := Open(Options{Path: backlogWAL(b, backlog), Fsync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			rows := make([]NewRow, group)
			for i := range rows {
				rows[i] = NewRow{SourceID: "app", Payload: payload(i)}
			}
			b.ResetTimer()
			for b.Loop() {
				if err := w.Update(func(tx *Tx) error { return steadyStep(tx, rows) }); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*group)/b.Elapsed().Seconds(), "rows/s")
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse)/1024, "heap-KB")
			var c Counts
			_ = w.View(func(tx *ReadTx) error { c = tx.Counts(); return nil })
			if c.Pending != backlog {
				b.Fatalf("backlog drifted to %d", c.Pending)
			}
		})
	}
}

// BenchmarkOpen prices the damage check a read-write open makes before
// bbolt opens the file (precheck.go): the check alone, in a child
// process; bbolt's own open (which scans the whole tree for free pages);
// and the WAL's Open, which is both.
func BenchmarkOpen(b *testing.B) {
	for _, backlog := range []int{10_000, 1_000_000} {
		path := backlogWAL(b, backlog)
		b.Run(fmt.Sprintf("backlog=%d/check", backlog), func(b *testing.B) {
			for b.Loop() {
				w := &WAL{opts: Options{Path: path, LockTimeout: time.Second, CheckTimeout: time.Hour}, path: path,
					log: slog.New(slog.DiscardHandler)}
				if err := w.precheck(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("backlog=%d/bbolt-open", backlog), func(b *testing.B) {
			w := &WAL{opts: Options{Path: path, LockTimeout: time.Second}}
			for b.Loop() {
				db, err := bolt.Open(path, 0o600, w.boltOptions())
				if err != nil {
					b.Fatal(err)
				}
				_ = db.Close()
			}
		})
		b.Run(fmt.Sprintf("backlog=%d/wal-open", backlog), func(b *testing.B) {
			for b.Loop() {
				w, err := Open(Options{Path: path})
				if err != nil {
					b.Fatal(err)
				}
				_ = w.Close()
			}
		})
	}
}

// BenchmarkWriteAmplification runs the steady state of BenchmarkClaimAck at
// several group sizes and reports what reaches the disk: bytes written per
// payload byte appended (write_bytes of /proc/self/io, Linux) and pages
// bbolt wrote per transaction. The fixed cost of a commit (the partly
// filled tail leaf, the head leaf the acks cut, the branches above them,
// the index and counter pages, the meta page) is paid once per
// transaction, so it shrinks per row as groups grow.
//
// The payloads are log lines like bench-e2e's (logLines): blocks are
// compressed, so a payload of one repeated pattern would flatter them.
func BenchmarkWriteAmplification(b *testing.B) {
	lines := logLines(4096)
	for _, group := range []int{64, 256, 1024, 4096} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) {
			w, err := Open(Options{Path: filepath.Join(benchDir(b), "wal.db"), Fsync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			rows := make([]NewRow, group)
			payloadBytes := 0
			for i := range rows {
				rows[i] = NewRow{SourceID: "app", Payload: lines[i]}
				payloadBytes += len(lines[i])
			}
			for range 4 { // a backlog of a few groups, as a loaded agent has
				if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(rows); return err }); err != nil {
					b.Fatal(err)
				}
			}
			written0, ioOK := procWriteBytes()
			pages0 := pagesWritten(w.db)
			b.ResetTimer()
			for b.Loop() {
				if err := w.Update(func(tx *Tx) error { return steadyStep(tx, rows) }); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			appended := float64(b.N * payloadBytes)
			b.ReportMetric(float64(b.N*group)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(pagesWritten(w.db)-pages0)/float64(b.N), "page-writes/tx")
			if written1, ok := procWriteBytes(); ok && ioOK {
				b.ReportMetric(float64(written1-written0)/appended, "disk-B/payload-B")
			}
		})
	}
}

// steadyStep is one transaction of a loaded agent in steady state: claim
// and ack a group from the head of the backlog, append as many rows.
func steadyStep(tx *Tx, rows []NewRow) error {
	now := time.Now().UnixMilli()
	claimed, err := tx.Claim(len(rows), now)
	if err != nil {
		return err
	}
	if len(claimed) != len(rows) {
		return fmt.Errorf("claimed %d, want %d", len(claimed), len(rows))
	}
	ids := make([]uint64, len(claimed))
	for i, r := range claimed {
		ids[i] = r.ID
	}
	if err := tx.Ack(ids, 0, now); err != nil {
		return err
	}
	_, _, err = tx.Append(rows)
	return err
}

func pagesWritten(db *bolt.DB) int64 {
	st := db.Stats()
	return st.TxStats.GetWrite()
}

// procWriteBytes is this process's write_bytes from /proc/self/io;
// ok=false where there is none.
func procWriteBytes() (int64, bool) {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
