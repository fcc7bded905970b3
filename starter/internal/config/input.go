package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/edge-agent/edge-agent/connector/input"
)

// defaultInputType is used when input.type is omitted (Java parity).
const defaultInputType = "file"

// decodeInput decodes the `input` section through the registry: input.type
// picks the factory, whose default config receives the flat keys and then
// the keys of the nested `input.<type>:` block (the Java agent's
// `input.file:`), which win. Nested mappings are merged key by key.
func (d *decoder) decodeInput(kv *ast.MappingValueNode, reg *input.Registry, cfg *Config) {
	n := d.resolve(kv.Value, "input")
	if n == nil {
		d.fail("input", errInputMissing())
		return
	}
	kvs, ok := entries(n)
	if !ok {
		d.typeError("input", "a mapping", n)
		return
	}

	typ := defaultInputType
	var flat []*ast.MappingValueNode
	nested := map[string]*ast.MappingValueNode{}
	for _, e := range kvs {
		switch name := keyName(e.Key); name {
		case "type":
			d.mark("input.type", "input.type", e.Key)
			if v := d.resolve(e.Value, "input.type"); v != nil {
				if s, ok := d.scalar(v, "input.type", "a string"); ok && strings.TrimSpace(s) != "" {
					typ = strings.ToLower(strings.TrimSpace(s))
				}
			}
		case "queue":
			d.mark("input.queue", "input.queue", e.Key)
			d.fail("input.queue", errLegacyInputQueue("input.queue"))
		default:
			// Any registered type name may hold a nested block; only
			// the one matching input.type is used, others are errors.
			if name != "" && isRegistered(reg, name) {
				nested[name] = e
				continue
			}
			flat = append(flat, e)
		}
	}

	f, err := reg.Get(typ)
	if err != nil {
		d.fail("input.type", err)
		return
	}
	icfg := f.NewDefaultConfig()
	rv := reflect.ValueOf(icfg)
	if icfg == nil || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		// A connector bug, not a user error; still reported, not panicked.
		d.failf("input", "input type %q: its factory's default config is not a pointer to a struct", typ)
		return
	}
	d.decodeStruct(flat, rv.Elem(), "input", "input")

	for name, e := range nested {
		if name != typ {
			d.mark("input."+name, "input."+name, e.Key)
			d.failf("input."+name, "block for input type %q, but input.type is %q", name, typ)
			continue
		}
		d.decodeNested(e, rv.Elem(), typ)
	}

	setStringField(rv.Elem(), "type", typ)
	cfg.InputType = typ
	cfg.Input = icfg
	cfg.InputID = strings.TrimSpace(stringField(rv.Elem(), "id"))
}

// decodeNested decodes `input.<type>:` over the flat keys.
func (d *decoder) decodeNested(e *ast.MappingValueNode, v reflect.Value, typ string) {
	display := "input." + typ
	d.mark(display, display, e.Key)
	n := d.resolve(e.Value, display)
	if n == nil {
		return
	}
	kvs, ok := entries(n)
	if !ok {
		d.typeError(display, "a mapping", n)
		return
	}
	var keep []*ast.MappingValueNode
	for _, kv := range kvs {
		switch name := keyName(kv.Key); name {
		case "type":
			kc := display + ".type"
			d.mark(kc, kc, kv.Key)
			d.failf(kc, "set the type as input.type, not inside %s", display)
		case "queue":
			kc := display + ".queue"
			d.mark(kc, kc, kv.Key)
			d.fail(kc, errLegacyInputQueue(kc))
		default:
			keep = append(keep, kv)
		}
	}
	d.decodeStruct(keep, v, "input", display)
}

// errInputMissing carries the Java agent's wording (its tests match on it).
func errInputMissing() error {
	return errors.New("input must be defined: add an input section with at least input.paths")
}

func errLegacyInputQueue(key string) error {
	return fmt.Errorf("%s is no longer supported: move these keys to the top-level queue section", key)
}

func isRegistered(reg *input.Registry, name string) bool {
	for _, t := range reg.Types() {
		if t == name {
			return true
		}
	}
	return false
}

// stringField returns the string field tagged yaml:"<key>", if any.
func stringField(v reflect.Value, key string) string {
	for _, f := range fieldsOf(v.Type()) {
		if f.name == key && v.Field(f.index).Kind() == reflect.String {
			return v.Field(f.index).String()
		}
	}
	return ""
}

// setStringField sets the string field tagged yaml:"<key>", if any.
func setStringField(v reflect.Value, key, val string) {
	for _, f := range fieldsOf(v.Type()) {
		if f.name == key && v.Field(f.index).Kind() == reflect.String {
			v.Field(f.index).SetString(val)
		}
	}
}
