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
	e, ok := d.decodeInputBody(n, reg, "input")
	if !ok {
		return
	}
	e.OptionalID = true
	cfg.Inputs = []InputEntry{e}
}

// decodeInputs decodes the `inputs` list: each entry takes every key
// `input` takes, and its own id, which is required.
func (d *decoder) decodeInputs(kv *ast.MappingValueNode, reg *input.Registry, cfg *Config) {
	n := d.resolve(kv.Value, "inputs")
	if n == nil {
		d.fail("inputs", errors.New("must list at least one input"))
		return
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.typeError("inputs", "a list of inputs", n)
		return
	}
	if len(seq.Values) == 0 {
		d.fail("inputs", errors.New("must list at least one input"))
		return
	}
	cfg.Inputs = make([]InputEntry, 0, len(seq.Values))
	for i, el := range seq.Values {
		key := fmt.Sprintf("inputs[%d]", i)
		d.mark(key, key, el)
		en := d.resolve(el, key)
		if kvs, ok := entries(en); ok && len(kvs) > 0 {
			// Problems of the entry as a whole (a missing id) point at
			// its first key, not at the list's dash.
			d.mark(key, key, kvs[0].Key)
		}
		if en == nil {
			d.failf(key, "empty entry: give it at least an id and paths")
			continue
		}
		if e, ok := d.decodeInputBody(en, reg, key); ok {
			cfg.Inputs = append(cfg.Inputs, e)
		}
	}
}

// decodeInputBody decodes one input mapping whose canonical key is
// section ("input", "inputs[2]").
func (d *decoder) decodeInputBody(n ast.Node, reg *input.Registry, section string) (InputEntry, bool) {
	kvs, ok := entries(n)
	if !ok {
		d.typeError(section, "a mapping", n)
		return InputEntry{}, false
	}

	typ := defaultInputType
	var flat []*ast.MappingValueNode
	var id *ast.MappingValueNode // <section>.id, or <section>.<type>.id, which wins
	var procs, queueDrop *ast.MappingValueNode
	nested := map[string]*ast.MappingValueNode{}
	for _, e := range kvs {
		switch name := keyName(e.Key); name {
		case "type":
			d.mark(section+".type", section+".type", e.Key)
			if v := d.resolve(e.Value, section+".type"); v != nil {
				if s, ok := d.scalar(v, section+".type", "a string"); ok && strings.TrimSpace(s) != "" {
					typ = strings.ToLower(strings.TrimSpace(s))
				}
			}
		case "id":
			id = e
		case "processors":
			procs = e
		case "queue-drop":
			queueDrop = e
		case "queue":
			d.mark(section+".queue", section+".queue", e.Key)
			d.fail(section+".queue", errLegacyInputQueue(section+".queue"))
		default:
			// Any registered type name may hold a nested block; only
			// the one matching the type is used, others are errors.
			if name != "" && isRegistered(reg, name) {
				nested[name] = e
				continue
			}
			flat = append(flat, e)
		}
	}

	f, err := reg.Get(typ)
	if err != nil {
		d.fail(section+".type", err)
		return InputEntry{}, false
	}
	idDisplay := section + ".id"
	icfg := f.NewDefaultConfig()
	rv := reflect.ValueOf(icfg)
	if icfg == nil || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		// A connector bug, not a user error; still reported, not panicked.
		d.failf(section, "input type %q: its factory's default config is not a pointer to a struct", typ)
		return InputEntry{}, false
	}
	d.decodeStruct(flat, rv.Elem(), section, section)

	for name, e := range nested {
		if name != typ {
			d.mark(section+"."+name, section+"."+name, e.Key)
			d.failf(section+"."+name, "block for input type %q, but %s.type is %q", name, section, typ)
			continue
		}
		if nestedID := d.decodeNested(e, rv.Elem(), typ, section); nestedID != nil {
			id, idDisplay = nestedID, section+"."+typ+".id"
		}
	}

	entry := InputEntry{Key: section, Type: typ, Config: icfg}
	if procs != nil {
		key := section + ".processors"
		d.mark(key, key, procs.Key)
		d.decodeValue(procs.Value, reflect.ValueOf(&entry.Processors).Elem(), key, key)
	}
	if queueDrop != nil {
		key := section + ".queue-drop"
		d.mark(key, key, queueDrop.Key)
		if v := d.resolve(queueDrop.Value, key); v != nil {
			if s, ok := d.scalar(v, key, "a string"); ok {
				entry.QueueDrop = strings.TrimSpace(s)
			}
		}
	}
	if id != nil {
		d.mark(section+".id", idDisplay, id.Key)
		if v := d.resolve(id.Value, section+".id"); v != nil {
			if s, ok := d.scalar(v, section+".id", "a string"); ok {
				entry.ID = strings.TrimSpace(s)
			}
		}
	}
	return entry, true
}

// decodeNested decodes `<section>.<type>:` over the flat keys and returns
// its id entry, if any, for decodeInputBody.
func (d *decoder) decodeNested(e *ast.MappingValueNode, v reflect.Value, typ, section string) (id *ast.MappingValueNode) {
	display := section + "." + typ
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
			d.failf(kc, "set the type as %s.type, not inside %s", section, display)
		case "queue":
			kc := display + ".queue"
			d.mark(kc, kc, kv.Key)
			d.fail(kc, errLegacyInputQueue(kc))
		default:
			keep = append(keep, kv)
		}
	}
	d.decodeStruct(keep, v, section, display)
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
