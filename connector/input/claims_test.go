package input

import (
	"strings"
	"testing"
)

func TestClaimsFirstInOrderWins(t *testing.T) {
	c := NewClaims([]string{"a", "b", "c"})
	prefix := func(p string) func(string) bool { return func(s string) bool { return strings.HasPrefix(s, p) } }
	c.Register("a", prefix("/app/"))
	unB := c.Register("b", prefix("/"))
	c.Register("c", prefix("/"))
	cases := []struct{ id, source, want string }{
		{"a", "/app/x.log", ""},
		{"b", "/app/x.log", "a"},
		{"c", "/app/x.log", "a"},
		{"b", "/db/x.log", ""},
		{"c", "/db/x.log", "b"},
		{"z", "/db/x.log", "b"}, // an id not in the order comes last
	}
	for _, tc := range cases {
		if got := c.Owner(tc.id, tc.source); got != tc.want {
			t.Errorf("Owner(%s, %s) = %q, want %q", tc.id, tc.source, got, tc.want)
		}
	}
	// Either instance of an id going leaves the other's registration (a
	// reload's new instance, or the old one kept when the reload failed).
	unB2 := c.Register("b", prefix("/db/"))
	unB()
	if got := c.Owner("c", "/db/x.log"); got != "b" {
		t.Fatalf("after the old b left, Owner = %q, want b", got)
	}
	unB = c.Register("b", prefix("/db/"))
	unB2()
	if got := c.Owner("c", "/db/x.log"); got != "b" {
		t.Fatalf("after the new b left, Owner = %q, want b", got)
	}
	unB()
	if got := c.Owner("c", "/db/x.log"); got != "" {
		t.Fatalf("after b left, Owner = %q, want none", got)
	}
	c.SetOrder([]string{"c", "a"})
	if got := c.Owner("a", "/app/x.log"); got != "c" {
		t.Fatalf("after the reorder, Owner = %q, want c", got)
	}
	var none *Claims
	if none.Owner("a", "/x") != "" {
		t.Fatal("nil claims own something")
	}
}
