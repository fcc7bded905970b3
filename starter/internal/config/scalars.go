package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// scalar returns the text of a scalar node with ${ENV} expanded. Numbers
// and booleans are returned as written, so `token: 0123` stays "0123".
func (d *decoder) scalar(n ast.Node, canonical, want string) (string, bool) {
	var s string
	switch v := n.(type) {
	case *ast.StringNode:
		s = v.Value
	case *ast.LiteralNode:
		if v.Value != nil {
			s = v.Value.Value
		}
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	default:
		d.typeError(canonical, want, n)
		return "", false
	}
	out, err := expandEnv(s, d.getenv)
	if err != nil {
		d.fail(canonical, err)
		return "", false
	}
	return out, true
}

func (d *decoder) decodeBool(n ast.Node, v reflect.Value, canonical string) {
	if b, ok := n.(*ast.BoolNode); ok {
		v.SetBool(b.Value)
		return
	}
	if _, ok := n.(*ast.StringNode); !ok {
		d.typeError(canonical, "true or false", n)
		return
	}
	s, ok := d.scalar(n, canonical, "true or false")
	if !ok {
		return
	}
	// The Java agent reads YAML 1.1, where yes/no/on/off are booleans;
	// accept them so existing files keep working.
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on":
		v.SetBool(true)
	case "false", "no", "off":
		v.SetBool(false)
	default:
		d.failf(canonical, "expected true or false, got %s", d.quote(canonical, s))
	}
}

// decodeInt reports whether it set v.
func (d *decoder) decodeInt(n ast.Node, v reflect.Value, canonical string) bool {
	var x int64
	switch nv := n.(type) {
	case *ast.IntegerNode:
		switch iv := nv.Value.(type) {
		case int64:
			x = iv
		case uint64:
			if iv > math.MaxInt64 {
				d.failf(canonical, "%s is out of range", nv.GetToken().Value)
				return false
			}
			x = int64(iv)
		default:
			d.typeError(canonical, "an integer", n)
			return false
		}
	case *ast.StringNode:
		s, ok := d.scalar(n, canonical, "an integer")
		if !ok {
			return false
		}
		p, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				d.failf(canonical, "%s is out of range", d.quote(canonical, s))
				return false
			}
			d.failf(canonical, "expected an integer, got %s", d.quote(canonical, s))
			return false
		}
		x = p
	default:
		d.typeError(canonical, "an integer", n)
		return false
	}
	if v.OverflowInt(x) {
		d.failf(canonical, "%d is out of range", x)
		return false
	}
	v.SetInt(x)
	return true
}

// decodeMillis reads a `*-ms` key, an integer count of milliseconds as in
// the Java agent's agent.yaml, into a time.Duration.
func (d *decoder) decodeMillis(n ast.Node, v reflect.Value, canonical string) {
	var ms int64
	if !d.decodeInt(n, reflect.ValueOf(&ms).Elem(), canonical) {
		return
	}
	const maxMillis = math.MaxInt64 / int64(time.Millisecond)
	if ms > maxMillis || ms < -maxMillis {
		d.failf(canonical, "%d ms is out of range", ms)
		return
	}
	v.SetInt(ms * int64(time.Millisecond))
}

func (d *decoder) decodeUint(n ast.Node, v reflect.Value, canonical string) {
	var x uint64
	switch nv := n.(type) {
	case *ast.IntegerNode:
		switch iv := nv.Value.(type) {
		case int64:
			if iv < 0 {
				d.failf(canonical, "must be >= 0, got %d", iv)
				return
			}
			x = uint64(iv)
		case uint64:
			x = iv
		default:
			d.typeError(canonical, "an integer", n)
			return
		}
	case *ast.StringNode:
		s, ok := d.scalar(n, canonical, "an integer")
		if !ok {
			return
		}
		p, err := strconv.ParseUint(strings.TrimSpace(s), 0, 64)
		if err != nil {
			d.failf(canonical, "expected an integer >= 0, got %s", d.quote(canonical, s))
			return
		}
		x = p
	default:
		d.typeError(canonical, "an integer", n)
		return
	}
	if v.OverflowUint(x) {
		d.failf(canonical, "%d is out of range", x)
		return
	}
	v.SetUint(x)
}

func (d *decoder) decodeFloat(n ast.Node, v reflect.Value, canonical string) {
	switch n.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.StringNode:
	default:
		d.typeError(canonical, "a number", n)
		return
	}
	s, ok := d.scalar(n, canonical, "a number")
	if !ok {
		return
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.failf(canonical, "expected a number, got %s", d.quote(canonical, s))
		return
	}
	v.SetFloat(f)
}

// decodeStrings fills a []string from a sequence. A single scalar is taken
// as a one-element list, which is what people mean by `paths: /var/log/x`.
func (d *decoder) decodeStrings(n ast.Node, v reflect.Value, canonical, display string) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		if s, ok := d.scalar(n, canonical, "a list of strings"); ok {
			v.Set(reflect.ValueOf([]string{s}).Convert(v.Type()))
		}
		return
	}
	out := reflect.MakeSlice(v.Type(), 0, len(seq.Values))
	for i, el := range seq.Values {
		ec := fmt.Sprintf("%s[%d]", canonical, i)
		d.mark(ec, fmt.Sprintf("%s[%d]", display, i), el)
		el = d.resolve(el, ec)
		s := ""
		if el != nil {
			s, ok = d.scalar(el, ec, "a string")
			if !ok {
				continue
			}
		}
		out = reflect.Append(out, reflect.ValueOf(s).Convert(v.Type().Elem()))
	}
	v.Set(out)
}

// decodeOther handles field types this decoder has no rule for (an input
// type may use maps or lists of structs) through the YAML library. Such
// values get no ${ENV} expansion.
func (d *decoder) decodeOther(n ast.Node, v reflect.Value, canonical string) {
	ptr := reflect.New(v.Type())
	if err := yaml.NodeToValue(n, ptr.Interface(), yaml.Strict()); err != nil {
		msg := err.Error()
		var ye yaml.Error
		if errors.As(err, &ye) {
			msg = ye.GetMessage()
		}
		if d.secrets[canonical] {
			msg = "value has the wrong type"
		}
		d.failf(canonical, "%s", msg)
		return
	}
	v.Set(ptr.Elem())
}

func (d *decoder) typeError(canonical, want string, n ast.Node) {
	d.failf(canonical, "expected %s, got %s", want, d.describe(canonical, n))
}

// describe names what was found, quoting scalars except for secret keys.
func (d *decoder) describe(canonical string, n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.BoolNode:
		return "a boolean " + d.quote(canonical, n.GetToken().Value)
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number " + d.quote(canonical, n.GetToken().Value)
	case *ast.IntegerNode:
		return "an integer " + d.quote(canonical, n.GetToken().Value)
	}
	if tk := n.GetToken(); tk != nil {
		return d.quote(canonical, tk.Value)
	}
	return "a " + n.Type().String()
}

// quote shows a value in a message, unless the key holds a secret.
func (d *decoder) quote(canonical, s string) string {
	if d.secrets[canonical] {
		return "a value (hidden: secret)"
	}
	const maxShown = 64
	if len(s) > maxShown {
		s = s[:maxShown] + "..."
	}
	return strconv.Quote(s)
}

// decodeStringMap reads a mapping of names to strings (management.opamp's
// headers). Values are checked under canonical itself, so a secret map
// (the headers) never has a value quoted back.
func (d *decoder) decodeStringMap(n ast.Node, v reflect.Value, canonical, display string) {
	kvs, ok := entries(n)
	if !ok {
		d.typeError(canonical, "a mapping of names to strings", n)
		return
	}
	out := reflect.MakeMapWithSize(v.Type(), len(kvs))
	for _, kv := range kvs {
		name := keyName(kv.Key)
		if name == "" {
			d.badKey(kv, canonical, display)
			continue
		}
		d.mark(canonical+"."+name, display+"."+name, kv.Key)
		el := d.resolve(kv.Value, canonical)
		if el == nil {
			continue
		}
		if s, ok := d.scalar(el, canonical, "a string"); ok {
			out.SetMapIndex(reflect.ValueOf(name), reflect.ValueOf(s))
		}
	}
	v.Set(out)
}
