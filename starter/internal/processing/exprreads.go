package processing

import (
	"maps"
	"slices"

	"github.com/expr-lang/expr/ast"
)

// stringTest is an expression of the form `a.b.c == "text"` (or !=): on
// an event where a.b.c is a string it is a comparison, without the
// expression's machine or an environment.
type stringTest struct {
	path   path
	want   string
	negate bool
}

// stringTestOf recognises a stringTest at root; nil otherwise.
func stringTestOf(root ast.Node) *stringTest {
	b, ok := root.(*ast.BinaryNode)
	if !ok || b.Operator != "==" && b.Operator != "!=" {
		return nil
	}
	m, lit := b.Left, b.Right
	if _, ok := m.(*ast.MemberNode); !ok {
		m, lit = lit, m
	}
	var want string
	switch l := lit.(type) {
	case *ast.StringNode:
		want = l.Value
	case *ast.ConstantNode:
		if want, ok = l.Value.(string); !ok {
			return nil
		}
	default:
		return nil
	}
	var names []string
	for {
		mm, ok := m.(*ast.MemberNode)
		if !ok {
			break
		}
		if !constMember(mm) || mm.Optional {
			return nil
		}
		names = append(names, mm.Property.(*ast.StringNode).Value)
		m = mm.Node
	}
	id, ok := m.(*ast.IdentifierNode)
	if !ok || id.Value == "$env" || len(names) == 0 {
		return nil
	}
	p := path{id.Value}
	for i := len(names) - 1; i >= 0; i-- {
		p = append(p, names[i])
	}
	return &stringTest{path: p, want: want, negate: b.Operator == "!="}
}

// test is the comparison's result where the value is a string; ok is
// false anywhere else (missing, another type), where the expression runs.
func (st *stringTest) test(top *node) (result, ok bool) {
	n, found := st.path.getNode(top)
	if !found || n.kind != kindString {
		return false, false
	}
	return (n.s == st.want) != st.negate, true
}

// reads is what an expression reads of a value: all of it, or only the
// members named (at any depth), as `payload.level` reads payload's level
// and nothing else of the event. An expression run on an environment
// holding just what it reads gives what it gives on the whole event.
type reads struct {
	all  bool
	kids map[string]*reads
	// names and list are kids in order, for a walk without a map's.
	names []string
	list  []*reads
	// m is the map the member values are put in, reused from one event
	// to the next (a boolean expression keeps none of its environment).
	m map[string]any
}

func (r *reads) kid(name string) *reads {
	if r.kids == nil {
		r.kids = make(map[string]*reads)
	}
	k := r.kids[name]
	if k == nil {
		k = &reads{}
		r.kids[name] = k
	}
	return k
}

// exprReads finds what the expression at root reads of its environment;
// nil when it may read the environment as a whole ($env).
//
// A variable is read only in part when every use of it is a chain of
// member accesses by constant names (`payload.a.b`, `payload["a"]`);
// anything else (`payload[x]`, `len(payload)`, `"a" in payload`, a
// method) reads the value where the chain stops as a whole.
func exprReads(root ast.Node) *reads {
	var v readsVisitor
	ast.Walk(&root, &v)
	inner := make(map[ast.Node]bool)
	for _, m := range v.members {
		if constMember(m) {
			inner[m.Node] = true
		}
	}
	covered := make(map[*ast.IdentifierNode]bool)
	top := &reads{}
	for _, m := range v.members {
		if !constMember(m) || inner[m] {
			continue
		}
		var names []string
		var cur ast.Node = m
		for {
			mm, ok := cur.(*ast.MemberNode)
			if !ok || !constMember(mm) {
				break
			}
			names = append(names, mm.Property.(*ast.StringNode).Value)
			cur = mm.Node
		}
		id, ok := cur.(*ast.IdentifierNode)
		if !ok {
			continue
		}
		if id.Value == "$env" {
			return nil
		}
		covered[id] = true
		r := top.kid(id.Value)
		for i := len(names) - 1; i >= 0 && !r.all; i-- {
			r = r.kid(names[i])
		}
		r.all = true
	}
	for _, id := range v.idents {
		if covered[id] {
			continue
		}
		if id.Value == "$env" {
			return nil
		}
		top.kid(id.Value).all = true
	}
	top.index()
	return top
}

func (r *reads) index() {
	r.names = slices.Sorted(maps.Keys(r.kids))
	r.list = r.list[:0]
	for _, name := range r.names {
		r.list = append(r.list, r.kids[name])
		r.kids[name].index()
	}
}

// constMember: a member access by a constant name, not a method.
func constMember(m *ast.MemberNode) bool {
	_, ok := m.Property.(*ast.StringNode)
	return ok && !m.Method
}

type readsVisitor struct {
	members []*ast.MemberNode
	idents  []*ast.IdentifierNode
}

func (v *readsVisitor) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.MemberNode:
		v.members = append(v.members, x)
	case *ast.IdentifierNode:
		v.idents = append(v.idents, x)
	}
}

// docEnv fills the top-level map of r with what r reads of the object
// top, in the map model; r.m is reused, so the result is good until the
// next call.
func (r *reads) docEnv(top *node) map[string]any {
	if r.m == nil {
		r.m = make(map[string]any, len(r.kids))
	}
	for k, name := range r.names {
		if i, ok := top.find(name); ok {
			r.m[name] = r.list[k].partial(&top.kids[i].val)
		} else {
			delete(r.m, name)
		}
	}
	return r.m
}

func (r *reads) partial(n *node) any {
	if r.all || n.kind != kindObject {
		return toAny(n)
	}
	return r.docEnv(n)
}
