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
	byID  map[string]*claimant
}

type claimant struct{ match func(source string) bool }

// NewClaims returns claims for inputs in order (their ids).
func NewClaims(order []string) *Claims {
	return &Claims{order: slices.Clone(order), byID: make(map[string]*claimant)}
}

// SetOrder replaces the order (a reload changed the inputs).
func (c *Claims) SetOrder(order []string) {
	c.mu.Lock()
	c.order = slices.Clone(order)
	c.mu.Unlock()
}

// Register records what input id matches; the returned func removes this
// registration only (a reload opens the new instance of an input before it
// closes the old one, under the same id).
func (c *Claims) Register(id string, match func(source string) bool) (unregister func()) {
	if c == nil {
		return func() {}
	}
	cl := &claimant{match: match}
	c.mu.Lock()
	c.byID[id] = cl
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		if c.byID[id] == cl {
			delete(c.byID, id)
		}
		c.mu.Unlock()
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
		if cl := c.byID[other]; cl != nil && cl.match(source) {
			return other
		}
	}
	return ""
}
