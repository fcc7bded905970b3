//go:build linux

package wal

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestClaimDropsMappedPages: rows the sender claimed were read through
// bbolt's mapping; once more than residentDropBytes were read, the WAL
// hands those pages back (MADV_DONTNEED) instead of keeping the whole
// backlog in the agent's resident set.
func TestClaimDropsMappedPages(t *testing.T) {
	w := openTest(t, newClock(t0))
	const rows = 4 * residentDropBytes / benchPayload
	group := make([]NewRow, 4096)
	for i := range group {
		group[i] = NewRow{SourceID: "app", Payload: payload(i)}
	}
	for done := 0; done < rows; done += len(group) {
		if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(group); return err }); err != nil {
			t.Fatal(err)
		}
	}
	claimed := 0
	for claimed < rows {
		if err := w.Update(func(tx *Tx) error {
			got, err := tx.Claim(len(group), t0)
			claimed += len(got)
			if len(got) == 0 {
				return fmt.Errorf("claimed nothing after %d of %d rows", claimed, rows)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	rss := mappedRSS(t, w)
	if rss > residentDropBytes+residentDropBytes/2 {
		t.Fatalf("%d KiB of the mapping resident after claiming %d KiB of rows; want at most about %d KiB",
			rss>>10, int64(rows)*benchPayload>>10, residentDropBytes>>10)
	}
}

// TestAppendsDropMappedPages: a backlog that only grows (the engine is
// down, nothing is claimed) still reads pages through bbolt's mapping,
// the old copy of every page a commit rewrites; those count toward the
// drop as rows read do, or the agent's resident set grows with the
// backlog until the link is back.
func TestAppendsDropMappedPages(t *testing.T) {
	w := openTest(t, newClock(t0))
	const rows = 20 * residentDropBytes / benchPayload
	group := make([]NewRow, 256) // agent.bulk-max-size: many small commits
	for i := range group {
		group[i] = NewRow{SourceID: "app", Payload: payload(i)}
	}
	for done := 0; done < rows; done += len(group) {
		if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(group); return err }); err != nil {
			t.Fatal(err)
		}
	}
	rss := mappedRSS(t, w)
	if rss > residentDropBytes+residentDropBytes/2 {
		t.Fatalf("%d KiB of the mapping resident after appending %d KiB of rows; want at most about %d KiB",
			rss>>10, int64(rows)*benchPayload>>10, residentDropBytes>>10)
	}
}

// TestVerifyDropsMappedPages: Verify on the agent's own WAL (db verify
// through the API) reads every page of the file through bbolt's mapping;
// it hands them back when done, or the agent's resident set grows to the
// size of the file.
func TestVerifyDropsMappedPages(t *testing.T) {
	w := openTest(t, newClock(t0))
	const rows = 8 * residentDropBytes / benchPayload
	group := make([]NewRow, 4096)
	for i := range group {
		group[i] = NewRow{SourceID: "app", Payload: payload(i)}
	}
	for done := 0; done < rows; done += len(group) {
		if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(group); return err }); err != nil {
			t.Fatal(err)
		}
	}
	if p, _, err := w.Verify(0); err != nil || len(p) > 0 {
		t.Fatalf("verify: %v %v", p, err)
	}
	// Verify reads the whole file (compressed, most of it): what stays
	// resident must be far less.
	if rss, size := mappedRSS(t, w), w.Size(); rss > size/8 {
		t.Fatalf("%d KiB of the mapping resident after verifying a file of %d KiB; want at most %d KiB",
			rss>>10, size>>10, size/8>>10)
	}
}

// mappedRSS is the resident size of bbolt's mapping of w, from
// /proc/self/smaps.
func mappedRSS(t *testing.T, w *WAL) int64 {
	t.Helper()
	start := uint64(w.db.Info().Data)
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		// A mapping starts with "lo-hi perms ..."; its fields follow as
		// "Name: value" lines.
		first, _, _ := strings.Cut(line, " ")
		if lo, _, ok := strings.Cut(first, "-"); ok && !strings.HasSuffix(first, ":") {
			a, err := strconv.ParseUint(lo, 16, 64)
			in = err == nil && a == start
			continue
		}
		if v, ok := strings.CutPrefix(line, "Rss:"); in && ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("smaps Rss %q: %v", v, err)
			}
			return kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if emu := os.Getenv("EDGE_AGENT_TEST_EMULATOR"); emu != "" {
		// qemu-user shows the host's smaps, whose addresses are the
		// guest's only when it maps the guest at offset 0 (not for a
		// 32-bit guest): the resident set cannot be read here.
		t.Skipf("no mapping at %#x in /proc/self/smaps under %s, which does not translate smaps addresses for this guest", start, emu)
	}
	t.Fatalf("no mapping at %#x in /proc/self/smaps", start)
	return 0
}

// cachedPages counts the pages of the file at path in the page cache.
func cachedPages(t *testing.T, path string) int {
	t.Helper()
	n := 0
	for _, c := range pageCacheMap(t, path) {
		if c {
			n++
		}
	}
	return n
}

// pageCacheMap says, for each page of the file at path, whether it is in
// the page cache (cachestat(2), Linux 6.5 and later: the test is skipped
// on an older kernel or an emulator that lacks it).
func pageCacheMap(t *testing.T, path string) []bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	ps := int64(os.Getpagesize())
	out := make([]bool, (st.Size()+ps-1)/ps)
	for i := range out {
		var cs unix.Cachestat_t
		err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Off: uint64(int64(i) * ps), Len: uint64(ps)}, &cs, 0)
		if errors.Is(err, unix.ENOSYS) {
			t.Skipf("SKIP: no cachestat(2) here (%v): the page cache cannot be inspected", err)
		}
		if err != nil {
			t.Fatalf("cachestat %s page %d: %v", path, i, err)
		}
		out[i] = cs.Cache > 0
	}
	return out
}

// TestAckDropsFreedBlockPages: with fsync, the pages of a block deleted
// by an ack leave the page cache at that commit, so that bbolt's reuse of
// them one page at a time does not dirty the large folio the block was
// written in; the blocks still queued stay cached (nothing is read back
// from disk for them), and commits in a row do not drop the whole file.
func TestAckDropsFreedBlockPages(t *testing.T) {
	clk := newClock(t0)
	w, err := Open(Options{Path: filepath.Join(t.TempDir(), "wal.db"), Fsync: true, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	lines := logLines(blockMaxRows)
	group := make([]NewRow, len(lines))
	for i := range group {
		group[i] = NewRow{SourceID: "app", Payload: lines[i]}
	}
	for range 4 {
		if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(group); return err }); err != nil {
			t.Fatal(err)
		}
	}
	var claimed []uint64
	if err := w.Update(func(tx *Tx) error {
		got, err := tx.Claim(len(group), t0)
		for _, r := range got {
			claimed = append(claimed, r.ID)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := pagesByBucket(t, w)
	if err := w.Update(func(tx *Tx) error { return tx.Ack(claimed, 0, t0) }); err != nil {
		t.Fatal(err)
	}
	after := pagesByBucket(t, w)
	cached := pageCacheMap(t, w.path)
	var freed, freedCached, live, liveCached int
	for id, b := range before {
		if b != string(bucketBlocks) || int(id) >= len(cached) {
			continue
		}
		if _, ok := after[id]; ok {
			live++
			if cached[id] {
				liveCached++
			}
			continue
		}
		freed++
		if cached[id] {
			freedCached++
		}
	}
	// The block is several pages; the blocks bucket's own leaf, which the
	// commit rewrote elsewhere, is freed too but stays cached.
	if freed < 4 {
		t.Fatalf("the ack freed %d pages of the blocks bucket; want a whole block of several", freed)
	}
	if freedCached > 1 {
		t.Fatalf("%d of the %d pages the ack freed are still cached; want the deleted block's pages dropped", freedCached, freed)
	}
	if live == 0 || liveCached < live/2 {
		t.Fatalf("%d of the %d pages of the queued blocks cached; want them kept", liveCached, live)
	}
}

// TestQuietCommitLeavesNoPagesCached: with fsync, a commit a second or more after the
// one before drops the file from the page cache, so that the next
// commit's one-page writes do not land in large cached folios; commits
// closer together keep it cached.
func TestQuietCommitLeavesNoPagesCached(t *testing.T) {
	if os.Getenv("EDGE_AGENT_TEST_EMULATOR") != "" {
		// make test-cross: qemu-user takes madvise as a hint and drops
		// nothing, so bbolt's mapping keeps pages no fadvise can drop.
		t.Skip("SKIP: under a user-mode emulator madvise(MADV_DONTNEED) does nothing")
	}
	for _, tc := range []struct {
		name     string
		gap      int64 // ms between the two commits
		wantNone bool
	}{
		{"a commit after a quiet second drops the cache", 1000, true},
		{"commits in a row keep it", 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock(t0)
			// With fsync the pages are clean once committed: the kernel
			// drops only those.
			w, err := Open(Options{Path: filepath.Join(t.TempDir(), "wal.db"), Fsync: true, Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			appendOne := func() {
				if err := w.Update(func(tx *Tx) error {
					_, _, err := tx.Append([]NewRow{{SourceID: "app", Payload: payload(1)}})
					return err
				}); err != nil {
					t.Fatal(err)
				}
			}
			appendOne()
			clk.Add(tc.gap)
			appendOne()
			n := cachedPages(t, w.path)
			if tc.wantNone && n != 0 {
				t.Fatalf("%d pages of the WAL still cached after a quiet commit", n)
			}
			if !tc.wantNone && n == 0 {
				t.Fatal("no page cached after commits in a row: the cache was dropped anyway")
			}
		})
	}
}
