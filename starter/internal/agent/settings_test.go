package agent

import (
	"strconv"
	"strings"
	"testing"
)

// TestQueueMaxBytesFitsThePlatform: a 32-bit build defaults queue.max-bytes
// to 512 MiB and refuses 0 (unlimited) and anything above it, naming the
// key and the limit, so bbolt's map stays under its 2 GiB cap there; a
// 64-bit build defaults to 1 GiB and accepts any size, unlimited included.
func TestQueueMaxBytesFitsThePlatform(t *testing.T) {
	const mib = 1 << 20
	wantDefault, limit := int64(1024*mib), int64(0)
	if strconv.IntSize == 32 {
		wantDefault, limit = 512*mib, 512*mib
	}
	if got := DefaultQueueSettings().MaxBytes; got != wantDefault {
		t.Fatalf("default queue.max-bytes = %d, want %d on a %d-bit build", got, wantDefault, strconv.IntSize)
	}
	type tc struct {
		maxBytes int64
		ok       bool
	}
	cases := []tc{{1, true}, {wantDefault, true}}
	if limit > 0 {
		cases = append(cases, tc{limit, true}, tc{limit + 1, false}, tc{0, false}, tc{1 << 40, false})
	} else {
		cases = append(cases, tc{0, true}, tc{1 << 40, true})
	}
	for _, c := range cases {
		q := DefaultQueueSettings()
		q.MaxBytes = c.maxBytes
		err := q.Validate()
		if c.ok {
			if err != nil {
				t.Errorf("max-bytes %d: %v, want accepted", c.maxBytes, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("max-bytes %d accepted on a 32-bit build, want refused", c.maxBytes)
			continue
		}
		for _, want := range []string{"max-bytes", strconv.FormatInt(limit, 10), "32-bit", "got " + strconv.FormatInt(c.maxBytes, 10)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("max-bytes %d: error %q does not say %q", c.maxBytes, err, want)
			}
		}
	}
}
