package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/account"
)

// A block that fails its checksum loses its rows to salvage. With a
// GapOrigin the copy carries gap records for them, with the "_seq"
// ranges inferred from the rows around the block, per input, so the
// audit of everything the copy delivers finds every number once; without
// one the copy has none and the audit finds the ranges missing.
func TestSalvageGapRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	origin := &GapOrigin{Host: "h1", AgentID: "a1"}
	w, err := Open(Options{Path: path, GapRecords: origin})
	if err != nil {
		t.Fatal(err)
	}
	app, web := new(uint64), new(uint64)
	var blocks []uint64
	for _, rows := range [][]NewRow{
		stampedRows("app", 10, app, 1000),
		append(stampedRows("app", 10, app, 2000), stampedRows("web", 5, web, 2000)...),
		append(stampedRows("web", 3, web, 3000), stampedRows("app", 10, app, 3000)...),
	} {
		mustUpdate(t, w, func(tx *Tx) error {
			first, _, err := tx.Append(rows)
			blocks = append(blocks, first)
			return err
		})
	}
	mustUpdate(t, w, func(tx *Tx) error {
		for in, n := range map[string]uint64{"app": *app, "web": *web} {
			v := binary.BigEndian.AppendUint64(nil, n)
			if err := tx.SetMeta(account.SeqMetaPrefix+in, v); err != nil {
				return err
			}
		}
		return nil
	})
	_ = w.Close()
	corruptBlock(t, path, blocks[1], func(v []byte) { v[len(v)-3] ^= 0x01 })

	for _, withOrigin := range []bool{true, false} {
		t.Run(fmt.Sprintf("origin=%v", withOrigin), func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "salvaged.db")
			opts := SalvageOptions{}
			if withOrigin {
				opts.GapOrigin = origin
			}
			rep, err := Salvage(path, dst, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.BadRows) != 1 {
				t.Fatalf("bad rows %v, want the block of rows %d..", rep.BadRows, blocks[1])
			}
			out, err := Open(Options{Path: dst})
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			var delivered bytes.Buffer
			for _, r := range claim(t, out, 1000, t0) {
				delivered.Write(r.Payload)
				delivered.WriteByte('\n')
			}
			audit, err := account.Audit(&delivered)
			if err != nil {
				t.Fatal(err)
			}
			if !withOrigin {
				if len(rep.GapRecords) != 0 || audit.OK() {
					t.Fatalf("without an origin: gap records %+v, audit %+v; want none and the lost ranges missing", rep.GapRecords, audit)
				}
				return
			}
			var got []string
			for _, r := range rep.GapRecords {
				got = append(got, fmt.Sprintf("%s %s %d %d..%d", r.Input, r.Reason, r.Count, r.FirstSeq, r.LastSeq))
			}
			want := []string{"app lost: salvage 10 11..20", "web lost: salvage 5 1..5"}
			if !slices.Equal(got, want) {
				t.Fatalf("gap records %q, want %q", got, want)
			}
			if !audit.OK() || len(audit.Streams) != 2 {
				t.Fatalf("audit of the copy %+v, want both inputs complete", audit)
			}
			for _, s := range audit.Streams {
				if s.Host != "" || (s.Input == "app" && (s.Max != 30 || s.GapRows != 10)) || (s.Input == "web" && (s.Max != 8 || s.GapRows != 5)) {
					t.Errorf("stream %+v", s)
				}
			}
		})
	}
}

// Rows delivered and deleted before the damage leave holes below a lost
// block too: the records take at most as many numbers as the block held,
// those next to the rows above it.
func TestSalvageGapRecordsAfterDeletedRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	w, err := Open(Options{Path: path, GapRecords: &GapOrigin{Host: "h1"}})
	if err != nil {
		t.Fatal(err)
	}
	app := new(uint64)
	var blocks []uint64
	for range 3 {
		mustUpdate(t, w, func(tx *Tx) error {
			first, _, err := tx.Append(stampedRows("app", 10, app, 1000))
			blocks = append(blocks, first)
			return err
		})
	}
	// The first block delivered and deleted.
	rows := claim(t, w, 10, t0)
	mustUpdate(t, w, func(tx *Tx) error {
		var ids []uint64
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if err := tx.Ack(ids, 0, t0); err != nil {
			return err
		}
		_, err := tx.CleanupAcked(t0+1, 100)
		return err
	})
	if c := counts(t, w); c.Pending != 20 || c.Acked != 0 || len(rows) != 10 {
		t.Fatalf("counts %+v after 10 rows delivered and deleted", c)
	}
	_ = w.Close()
	corruptBlock(t, path, blocks[1], func(v []byte) { v[len(v)-3] ^= 0x01 })
	rep, err := Salvage(path, filepath.Join(t.TempDir(), "salvaged.db"), SalvageOptions{GapOrigin: &GapOrigin{Host: "h1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.GapRecords) != 1 || rep.GapRecords[0].FirstSeq != 11 || rep.GapRecords[0].LastSeq != 20 || rep.GapRecords[0].Count != 10 {
		t.Fatalf("gap records %+v, want one of app 11..20", rep.GapRecords)
	}
}
