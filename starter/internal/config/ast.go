package config

import (
	"github.com/goccy/go-yaml/ast"
)

// position is the 1-based line and column of a node's token (0, 0 when
// unknown).
func position(n ast.Node) (line, col int) {
	if n == nil {
		return 0, 0
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return 0, 0
	}
	return tk.Position.Line, tk.Position.Column
}

// collectAnchors records every anchor in the document so aliases can be
// resolved wherever they appear. It walks with an explicit stack: a
// hostile file must not be able to exhaust the goroutine stack.
func collectAnchors(root ast.Node) map[string]ast.Node {
	anchors := make(map[string]ast.Node)
	stack := []ast.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch v := n.(type) {
		case *ast.MappingNode:
			for _, mv := range v.Values {
				stack = append(stack, mv)
			}
		case *ast.MappingValueNode:
			stack = append(stack, v.Key, v.Value)
		case *ast.MappingKeyNode:
			stack = append(stack, v.Value)
		case *ast.SequenceNode:
			stack = append(stack, v.Values...)
		case *ast.TagNode:
			stack = append(stack, v.Value)
		case *ast.AnchorNode:
			if v.Name != nil && v.Name.GetToken() != nil {
				anchors[v.Name.GetToken().Value] = v.Value
			}
			stack = append(stack, v.Value)
		}
	}
	return anchors
}

// resolve strips anchors and tags and follows aliases. It returns nil for
// null values (the key keeps its default) and reports undefined aliases.
func (d *decoder) resolve(n ast.Node, canonical string) ast.Node {
	// A bounded number of steps: alias chains are short in real files and
	// a cycle must not hang the loader.
	for range 64 {
		switch v := n.(type) {
		case nil:
			return nil
		case *ast.NullNode:
			return nil
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			name := ""
			if v.Value != nil && v.Value.GetToken() != nil {
				name = v.Value.GetToken().Value
			}
			target, ok := d.anchors[name]
			if !ok {
				d.failf(canonical, "alias *%s refers to no anchor &%s", name, name)
				return nil
			}
			n = target
		default:
			return n
		}
	}
	d.failf(canonical, "alias chain too long (cycle?)")
	return nil
}

// entries returns the key/value pairs of a mapping node.
func entries(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch v := n.(type) {
	case *ast.MappingNode:
		return v.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}, true
	}
	return nil, false
}

// keyName returns the text of a mapping key, or "" when the key is not a
// plain scalar (complex keys, merge keys).
func keyName(k ast.Node) string {
	for range 8 {
		switch v := k.(type) {
		case *ast.MappingKeyNode:
			k = v.Value
		case *ast.TagNode:
			k = v.Value
		case *ast.AnchorNode:
			k = v.Value
		case *ast.MergeKeyNode, nil:
			return ""
		case *ast.MappingNode, *ast.MappingValueNode, *ast.SequenceNode, *ast.AliasNode:
			return ""
		default:
			if tk := k.GetToken(); tk != nil {
				return tk.Value
			}
			return ""
		}
	}
	return ""
}
