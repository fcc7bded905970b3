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
// `input.file:`), which win. Nested mappings are merged key by key. The
// keys every input shares, type and id, are decoded here and never reach
// the input's config: the id is handed to the input when it is created.
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
	var id *ast.MappingValueNode // input.id, or input.<type>.id, which wins
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
		case "id":
			id = e
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
	idDisplay := "input.id"
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
		if nestedID := d.decodeNested(e, rv.Elem(), typ); nestedID != nil {
			id, idDisplay = nestedID, "input."+typ+".id"
		}
	}

	cfg.InputType = typ
	cfg.Input = icfg
	if id != nil {
		d.mark("input.id", idDisplay, id.Key)
		if v := d.resolve(id.Value, "input.id"); v != nil {
			if s, ok := d.scalar(v, "input.id", "a string"); ok {
				cfg.InputID = strings.TrimSpace(s)
			}
		}
	}
}

// decodeNested decodes `input.<type>:` over the flat keys and returns its
// id entry, if any, for decodeInput.
func (d *decoder) decodeNested(e *ast.MappingValueNode, v reflect.Value, typ string) (id *ast.MappingValueNode) {
	display := "input." + typ
	d.mark(display, display, e.Key)
	n := d.resolve(e.Value, display)
	if n == nil {
		return nil
	}
	kvs, ok := entries(n)
	if !ok {
		d.typeError(display, "a mapping", n)
		return nil
	}
	var keep []*ast.MappingValueNode
	for _, kv := range kvs {
		switch name := keyName(kv.Key); name {
		case "id":
			id = kv
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
	return id
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
