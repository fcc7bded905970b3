//go:build linux

package wal

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
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
	t.Fatalf("no mapping at %#x in /proc/self/smaps", start)
	return 0
}
