package processing

import (
	"errors"
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
