package config

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/edge-agent/edge-agent/starter/internal/suggest"
)

// decoder overlays a YAML AST onto config structs, field by field, using
// their yaml tags. It is hand-rolled rather than yaml.NodeToValue so that it
// can (1) report every unknown key and wrong type at once instead of
// stopping at the first, (2) suggest the closest known key, (3) expand
// ${ENV} inside scalars before they are converted, and (4) remember where
// each key was written for the checks that run after decoding.
type decoder struct {
	src     *sourceMap
	getenv  func(string) string
	anchors map[string]ast.Node
	probs   *problems
	warns   []Warning
	// aliases maps an old canonical key to its current one.
	aliases map[string]string
	// secrets are canonical keys whose values must never be echoed.
	secrets map[string]bool
	// known lists every valid canonical key, to point a key written in
	// the wrong section to the right one.
	known []string
	// stdinInput: a config without inputs gets one reading stdin
	// (LoadOptions.StdinInput), so none missing is not a problem.
	stdinInput bool
}

// secretKeys are canonical keys whose values are never quoted back.
func secretKeys() map[string]bool {
	return map[string]bool{
		"output.token":                 true,
		"output.aes-secret-key-base64": true,
		"http.token":                   true,
		// Every header value (decodeStringMap checks each under this key).
		headersKey: true,
	}
}

// deprecatedAliases maps keys the Java agent used to their current names.
func deprecatedAliases() map[string]string {
	return map[string]string{"queue.sqlite-path": "queue.path"}
}

func (d *decoder) fail(canonical string, err error) {
	d.probs.add(d.src.fieldError(canonical, err))
}

func (d *decoder) failf(canonical, format string, args ...any) {
	d.fail(canonical, fmt.Errorf(format, args...))
}

func (d *decoder) warn(canonical, format string, args ...any) {
	d.warns = append(d.warns, d.src.warning(canonical, fmt.Sprintf(format, args...)))
}

func (d *decoder) mark(canonical, display string, n ast.Node) {
	line, col := position(n)
	d.src.set(canonical, place{display: display, line: line, col: col})
}

// fieldInfo is one yaml key of a config struct.
type fieldInfo struct {
	name  string
	index []int // for reflect.Value.FieldByIndex: inline structs nest
	typ   reflect.Type
}

// fieldsOf lists the yaml keys of a struct type in declaration order. A
// field tagged `yaml:",inline"` lends its keys to the enclosing struct:
// that is how a section holds the options of more than one component
// (queue: the WAL's and the scheduler's).
func fieldsOf(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			for _, in := range fieldsOf(f.Type) {
				in.index = append([]int{i}, in.index...)
				out = append(out, in)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, fieldInfo{name: name, index: []int{i}, typ: f.Type})
	}
	return out
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// decodeStruct overlays mapping entries onto the struct v. canonical is the
// key path used for lookups ("input"); display is the path as written
// ("input.file"), which differs only inside the nested input.<type> block.
func (d *decoder) decodeStruct(kvs []*ast.MappingValueNode, v reflect.Value, canonical, display string) {
	fields := fieldsOf(v.Type())
	byName := make(map[string][]int, len(fields))
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		byName[f.name] = f.index
		names = append(names, f.name)
	}
	// setBy remembers which written key set a field, so an old alias and
	// its new name cannot both be used.
	setBy := make(map[string]string)
	for _, kv := range kvs {
		name := keyName(kv.Key)
		kc, kd := join(canonical, name), join(display, name)
		if name == "" {
			d.badKey(kv, canonical, display)
			continue
		}
		d.mark(kc, kd, kv.Key)
		field := name
		if to, ok := d.aliases[kc]; ok {
			field = to[strings.LastIndexByte(to, '.')+1:]
			d.warn(kc, "%s is deprecated: rename it to %s", kd, join(display, field))
		}
		idx, ok := byName[field]
		if !ok {
			d.unknownKey(kc, kd, name, names, display)
			continue
		}
		if prev, dup := setBy[field]; dup {
			d.failf(kc, "%s and %s are both set; keep only %s", join(display, prev), kd, join(display, field))
			continue
		}
		setBy[field] = name
		fc := join(canonical, field)
		if fc != kc {
			// Checks after decoding look up the current name.
			d.mark(fc, kd, kv.Key)
		}
		d.decodeValue(kv.Value, v.FieldByIndex(idx), fc, kd)
	}
}

// badKey reports a key that is not a plain name (a merge key, a list...).
func (d *decoder) badKey(kv *ast.MappingValueNode, canonical, display string) {
	kc, kd := join(canonical, "<key>"), join(display, "<key>")
	d.mark(kc, kd, kv.Key)
	if _, merge := kv.Key.(*ast.MergeKeyNode); merge {
		d.failf(kc, "merge keys (<<) are not supported; write the keys out")
		return
	}
	d.failf(kc, "keys must be plain names")
}

func (d *decoder) unknownKey(canonical, display, name string, known []string, section string) {
	msg := "unknown key"
	if section == "" {
		msg = "unknown section"
	}
	if s := suggest.Closest(name, known); s != "" {
		d.failf(canonical, "%s; did you mean %s?", msg, join(section, s))
		return
	}
	if elsewhere := d.sameLeaf(name, canonical); len(elsewhere) > 0 {
		d.failf(canonical, "%s; did you mean %s?", msg, strings.Join(elsewhere, " or "))
		return
	}
	where := section
	if where == "" {
		where = "the top level"
	}
	d.failf(canonical, "%s; %s accepts: %s", msg, where, strings.Join(known, ", "))
}

// sameLeaf lists known keys in other sections ending in name.
func (d *decoder) sameLeaf(name, canonical string) []string {
	var out []string
	for _, k := range d.known {
		if k != canonical && (k == name || strings.HasSuffix(k, "."+name)) {
			out = append(out, k)
		}
	}
	return out
}

// schemaKeys lists the canonical keys of a config struct type. depth
// bounds the walk in case a type refers to itself.
func schemaKeys(t reflect.Type, prefix string, depth int) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || depth <= 0 {
		return nil
	}
	var out []string
	for _, f := range fieldsOf(t) {
		k := join(prefix, f.name)
		out = append(out, k)
		if !isLeaf(f.typ) {
			out = append(out, schemaKeys(f.typ, k, depth-1)...)
		}
	}
	return out
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// isLeaf: a struct that decodes from one scalar holds no keys of its own.
func isLeaf(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(textUnmarshalerType)
}

// decodeValue converts one node into v. A null leaves v at its default.
func (d *decoder) decodeValue(n ast.Node, v reflect.Value, canonical, display string) {
	n = d.resolve(n, canonical)
	if n == nil {
		return
	}
	switch {
	case v.Type() == stepsType:
		d.decodeProcessors(n, v, canonical, display)
		return
	case v.Type() == durationType:
		d.decodeMillis(n, v, canonical)
		return
	case v.CanAddr() && v.Addr().Type().Implements(textUnmarshalerType):
		// Enums of the components (packet mode, compression...) parse
		// themselves: their own parser is the only one.
		if s, ok := d.scalar(n, canonical, "a string"); ok {
			if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
				d.fail(canonical, err)
			}
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		kvs, ok := entries(n)
		if !ok {
			d.typeError(canonical, "a mapping", n)
			return
		}
		d.decodeStruct(kvs, v, canonical, display)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decodeValue(n, v.Elem(), canonical, display)
	case reflect.String:
		if s, ok := d.scalar(n, canonical, "a string"); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		d.decodeBool(n, v, canonical)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.decodeInt(n, v, canonical)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		d.decodeUint(n, v, canonical)
	case reflect.Float32, reflect.Float64:
		d.decodeFloat(n, v, canonical)
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String && v.Type().Elem().Kind() == reflect.String {
			d.decodeStringMap(n, v, canonical, display)
			return
		}
		d.decodeOther(n, v, canonical)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.String {
			d.decodeStrings(n, v, canonical, display)
			return
		}
		if v.Type().Elem().Kind() == reflect.Struct {
			d.decodeStructs(n, v, canonical, display)
			return
		}
		d.decodeOther(n, v, canonical)
	default:
		d.decodeOther(n, v, canonical)
	}
}

// decodeStructs fills a list of structs (a relay's tokens) element by
// element like any struct: ${ENV} expanded, unknown keys refused, each
// problem at its key ("tokens[1].token-file").
func (d *decoder) decodeStructs(n ast.Node, v reflect.Value, canonical, display string) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.typeError(canonical, "a list of mappings", n)
		return
	}
	out := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
	for i, el := range seq.Values {
		ec, ed := fmt.Sprintf("%s[%d]", canonical, i), fmt.Sprintf("%s[%d]", display, i)
		d.mark(ec, ed, el)
		if el = d.resolve(el, ec); el == nil {
			continue
		}
		d.decodeValue(el, out.Index(i), ec, ed)
	}
	v.Set(out)
}

// decodeStringMap fills a map[string]string from a mapping (an input's
// fields, management.opamp's headers), remembering where each key is
// written so a component's check of one name points at it, with ${ENV}
// expanded in the values. The values of a secret map (the headers) are
// checked under the map's own key, so none is ever quoted back.
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
		kc, kd := join(canonical, name), join(display, name)
		d.mark(kc, kd, kv.Key)
		vk := kc
		if d.secrets[canonical] {
			vk = canonical
		}
		s := ""
		if el := d.resolve(kv.Value, vk); el != nil {
			if s, ok = d.scalar(el, vk, "a string"); !ok {
				continue
			}
		}
		out.SetMapIndex(reflect.ValueOf(name).Convert(v.Type().Key()), reflect.ValueOf(s).Convert(v.Type().Elem()))
	}
	v.Set(out)
}
