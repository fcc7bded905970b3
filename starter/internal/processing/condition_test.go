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
