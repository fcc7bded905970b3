package clockjump

import (
	"encoding/json"
	"fmt"
	"sort"
)

// maxEpochs bounds the epochs kept: the oldest go first (their rows are
// then sent as stamped).
const maxEpochs = 64

// Epoch is a run of rows, from row id First on, stamped while wall minus
// monotonic was Offset (ms), in boot Boot.
type Epoch struct {
	First  uint64 `json:"first"`
	Boot   string `json:"boot"`
	Offset int64  `json:"offset_ms"`
}

// Epochs are a WAL's epochs, by First ascending.
type Epochs []Epoch

// Offset is wall minus monotonic on c, in ms.
func Offset(c Clock) int64 { return c.Wall().UnixMilli() - c.SinceBoot().Milliseconds() }

// Observe starts an epoch at row first when offset, in boot, is not the
// last epoch's; it reports whether it did (store the epochs then).
func (e *Epochs) Observe(first uint64, boot string, offset int64) bool {
	if n := len(*e); n > 0 {
		last := (*e)[n-1]
		if last.Boot == boot && abs(offset-last.Offset) <= Threshold.Milliseconds() {
			return false
		}
	}
	*e = append(*e, Epoch{First: first, Boot: boot, Offset: offset})
	if len(*e) > maxEpochs {
		*e = append(Epochs(nil), (*e)[len(*e)-maxEpochs:]...)
	}
	return true
}

// Correction is what to add to the "_ts" of row id, with the current
// boot and offset: ok=false when nothing (no jump since it was stamped,
// or no epoch covers it).
func (e Epochs) Correction(id uint64, boot string, offset int64) (ms int64, ok bool) {
	i := sort.Search(len(e), func(i int) bool { return e[i].First > id }) - 1
	if i < 0 {
		return 0, false
	}
	target := offset
	if e[i].Boot != boot {
		target = e[i].Offset
		for _, later := range e[i+1:] {
			if later.Boot == e[i].Boot {
				target = later.Offset
			}
		}
	}
	d := target - e[i].Offset
	return d, abs(d) > Threshold.Milliseconds()
}

// Jumped reports whether any row may need a correction: more than one
// epoch, or one whose offset is not the current one.
func (e Epochs) Jumped(boot string, offset int64) bool {
	return len(e) > 1 || (len(e) == 1 && (e[0].Boot != boot || abs(offset-e[0].Offset) > Threshold.Milliseconds()))
}

// Marshal and Parse store the epochs.
func (e Epochs) Marshal() []byte {
	b, _ := json.Marshal(e) // strings and numbers: cannot fail
	return b
}

// Parse reads what Marshal wrote; nil or empty is no epoch.
func Parse(b []byte) (Epochs, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var e Epochs
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("clock epochs: %w", err)
	}
	return e, nil
}

func abs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}
