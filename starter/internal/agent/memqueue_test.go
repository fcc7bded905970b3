package agent

import (
	"bytes"
	"slices"
	"testing"
	"time"
)

// The in-memory queue (delivery-guarantee NON) bounds a claim in bytes as
// the WAL does: it stops before the row that would pass the bound, the
// first row goes whatever its size, and bounded says whether rows remain.
func TestMemQueueClaimBoundedInBytes(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	q := newMemQueue(100, 0, now)
	var payloads [][]byte
	for i, n := range []int{100, 100, 100, 700, 100} {
		payloads = append(payloads, bytes.Repeat([]byte{'a' + byte(i)}, n))
	}
	if err := q.Append("src", payloads); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		max, maxBytes int
		want          []int // payload sizes
		wantBounded   bool
	}{
		{10, 250, []int{100, 100}, true},
		{10, 500, []int{100}, true},
		{10, 500, []int{700}, true},
		{10, 0, []int{100}, false},
		{10, 100, nil, false},
	} {
		rows, bounded, err := q.Claim(step.max, step.maxBytes, now)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		for _, r := range rows {
			sizes = append(sizes, len(r.Payload))
		}
		if !slices.Equal(sizes, step.want) || bounded != step.wantBounded {
			t.Fatalf("Claim(%d, %d): sizes %v bounded %v, want %v bounded %v", step.max, step.maxBytes, sizes, bounded, step.want, step.wantBounded)
		}
	}
}
