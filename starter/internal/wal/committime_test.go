package wal

import "testing"

// A committed Update that wrote rows reports the time its pages took to
// reach the disk; before any commit the figure is zero.
func TestCommitDiskTimeFollowsCommits(t *testing.T) {
	w := openTest(t, nil)
	if d := w.CommitDiskTime(); d != 0 {
		t.Fatalf("CommitDiskTime before any commit = %v, want 0", d)
	}
	if err := w.Update(func(tx *Tx) error {
		_, _, err := tx.Append([]NewRow{{SourceID: "src", Payload: []byte("a line")}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if d := w.CommitDiskTime(); d <= 0 {
		t.Fatalf("CommitDiskTime after a commit = %v, want > 0 (pages were written and synced)", d)
	}
}
