package processing

import (
	"fmt"
	"sync"
)

// Condition is a boolean expression over an event, in the processors'
// expression language (the same variables: payload, _file, every other
// top-level key; a missing key is nil), for callers outside a chain such
// as the agent's lanes. Safe for concurrent use once compiled: the
// expression reuses one machine between runs, so runs take turns.
type Condition struct {
	mu sync.Mutex
	x  *expression
}

// NewCondition compiles src, which must give a boolean; a compile error
// is an *ExprError when it has a position.
func NewCondition(src string) (*Condition, error) {
	x, err := compileExpr(src, true)
	if err != nil {
		return nil, err
	}
	return &Condition{x: x}, nil
}

// Match decodes the event JSON object and tests the condition on it. An
// event that does not decode, or on which the expression fails, is an
// error (the caller decides what such an event is).
func (c *Condition) Match(event []byte) (bool, error) {
	fields, err := decodeEvent(event)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	ok, err := c.x.test(fields)
	c.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("condition %q: %w", c.x.src, err)
	}
	return ok, nil
}

// FirstMatch decodes the event JSON object once and returns the index of
// the first condition that holds on it; -1 when none does, for an event
// that does not decode, and past a condition that fails on it (that one
// counts as not holding).
func FirstMatch(conds []*Condition, event []byte) int {
	if len(conds) == 0 {
		return -1
	}
	fields, err := decodeEvent(event)
	if err != nil {
		return -1
	}
	for i, c := range conds {
		c.mu.Lock()
		ok, err := c.x.test(fields)
		c.mu.Unlock()
		if err == nil && ok {
			return i
		}
	}
	return -1
}
