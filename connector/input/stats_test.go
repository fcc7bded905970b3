package input

import (
	"reflect"
	"testing"
)

// Add sums the reason counts by reason, whatever order each input lists
// them in, and leaves its operands alone.
func TestStatsAddSumsCountsByReason(t *testing.T) {
	a := Stats{AuthFailures: []Count{{"wrong_token", 2}, {"timeout", 1}}, Evicted: 3}
	b := Stats{AuthFailures: []Count{{"timeout", 4}, {"closed", 5}}, Evicted: 1}
	got := a.Add(b).Add(Stats{})
	want := Stats{AuthFailures: []Count{{"wrong_token", 2}, {"timeout", 5}, {"closed", 5}}, Evicted: 4}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Add = %+v, want %+v", got, want)
	}
	if a.AuthFailures[1].N != 1 {
		t.Fatal("Add changed its receiver's counts")
	}
	if got := (Stats{}).Add(Stats{}); got.AuthFailures != nil {
		t.Fatalf("two inputs without counts add up to %+v, want none", got.AuthFailures)
	}
}
