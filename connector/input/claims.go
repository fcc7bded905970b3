package input

import (
	"slices"
	"sync"
)

// Claims settles which input reads a source that several inputs match (a
// file two `inputs:` entries' globs cover): the first of them in the
// agent's order, so the source is read once. The agent makes one for all
// its inputs and hands it over in Settings; inputs register a matcher and
// ask Owner before they take up a new source. Safe for concurrent use.
type Claims struct {
	mu    sync.RWMutex
	order []string
	// byID holds every live registration of an input id: a reload opens
	// an input's new instance before it closes the old one, and keeps the
	// old one when the reload fails.
	byID map[string][]*claimant
}

type claimant struct{ match func(source string) bool }

// NewClaims returns claims for inputs in order (their ids).
func NewClaims(order []string) *Claims {
	return &Claims{order: slices.Clone(order), byID: make(map[string][]*claimant)}
}

// SetOrder replaces the order (a reload changed the inputs).
func (c *Claims) SetOrder(order []string) {
	c.mu.Lock()
	c.order = slices.Clone(order)
	c.mu.Unlock()
}

// Register records what an instance of input id matches; the returned
// func removes this registration only, leaving other instances of id.
func (c *Claims) Register(id string, match func(source string) bool) (unregister func()) {
	if c == nil {
		return func() {}
	}
	cl := &claimant{match: match}
	c.mu.Lock()
	c.byID[id] = append(c.byID[id], cl)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		left := slices.DeleteFunc(c.byID[id], func(x *claimant) bool { return x == cl })
		if len(left) == 0 {
			delete(c.byID, id)
			return
		}
		c.byID[id] = left
	}
}

// Owner returns the id of the first input before id in the order that
// matches source, or "" when id is the first (it may read source). A nil
// *Claims owns nothing.
func (c *Claims) Owner(id, source string) string {
	if c == nil {
		return ""
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, other := range c.order {
		if other == id {
			return ""
		}
		for _, cl := range c.byID[other] {
			if cl.match(source) {
				return other
			}
		}
	}
	return ""
}
