package processing

import (
	"errors"
	"sync"
	"testing"
)

func TestCondition(t *testing.T) {
	c, err := NewCondition(`level in ["error", "fatal"] || payload contains "ALARM"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		event string
		want  bool
		err   bool
	}{
		{`{"level":"error","payload":"x"}`, true, false},
		{`{"level":"info","payload":"ALARM: door"}`, true, false},
		{`{"level":"info","payload":"ok"}`, false, false},
		{`{"payload":"no level"}`, false, false},
		{`not json`, false, true},
	} {
		got, err := c.Match([]byte(tc.event))
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("Match(%s) = %v, %v; want %v, error %v", tc.event, got, err, tc.want, tc.err)
		}
	}
	var ee *ExprError
	if _, err := NewCondition(`level ==`); !errors.As(err, &ee) {
		t.Errorf("NewCondition of a broken expression: err = %v, want an *ExprError", err)
	}
	if _, err := NewCondition(`1 + 2`); err == nil {
		t.Error("NewCondition of a number expression succeeded")
	}
}

func TestFirstMatch(t *testing.T) {
	var conds []*Condition
	for _, src := range []string{`level == "error"`, `payload contains "ALARM"`, `level == "info"`} {
		c, err := NewCondition(src)
		if err != nil {
			t.Fatal(err)
		}
		conds = append(conds, c)
	}
	for _, tc := range []struct {
		event string
		want  int
	}{
		{`{"level":"error","payload":"ALARM"}`, 0},
		{`{"level":"info","payload":"ALARM"}`, 1},
		{`{"level":"info","payload":"ok"}`, 2},
		{`{"level":"debug"}`, -1},
		{`[1]`, -1},
	} {
		if got := FirstMatch(conds, []byte(tc.event)); got != tc.want {
			t.Errorf("FirstMatch(%s) = %d, want %d", tc.event, got, tc.want)
		}
	}
	if FirstMatch(nil, []byte(`{}`)) != -1 {
		t.Error("FirstMatch of no conditions")
	}
}

// TestConditionConcurrentMatch runs one Condition from several goroutines
// (the race detector fails it when runs share the machine unguarded).
func TestConditionConcurrentMatch(t *testing.T) {
	c, err := NewCondition(`payload.level == "error"`)
	if err != nil {
		t.Fatal(err)
	}
	events := [][]byte{
		[]byte(`{"payload":{"level":"error"}}`),
		[]byte(`{"payload":{"level":"info"}}`),
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				ev := events[(g+i)%2]
				ok, err := c.Match(ev)
				if err != nil || ok != ((g+i)%2 == 0) {
					t.Errorf("Match(%s) = %v, %v", ev, ok, err)
					return
				}
				if got := FirstMatch([]*Condition{c}, ev); (got == 0) != ok {
					t.Errorf("FirstMatch(%s) = %d", ev, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}
