package config

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/goccy/go-yaml/ast"

	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/processing"
)

var stepsType = reflect.TypeFor[[]processing.Step]()

// decodeProcessors fills a `processors:` list: each entry is decoded like
// any struct (unknown keys refused, positions kept), except that `keep:`
// written as a list is the field allow-list and as a string the filter.
func (d *decoder) decodeProcessors(n ast.Node, v reflect.Value, canonical, display string) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.typeError(canonical, "a list of processors", n)
		return
	}
	if len(seq.Values) == 0 {
		return // an empty list is none: the input's events pass unchanged
	}
	out := make([]processing.Step, len(seq.Values))
	for i, el := range seq.Values {
		ec, ed := fmt.Sprintf("%s[%d]", canonical, i), fmt.Sprintf("%s[%d]", display, i)
		d.mark(ec, ed, el)
		if el = d.resolve(el, ec); el == nil {
			continue
		}
		kvs, ok := entries(el)
		if !ok {
			d.typeError(ec, "a mapping such as {parse: {format: json}}", el)
			continue
		}
		if len(kvs) > 0 {
			d.mark(ec, ed, kvs[0].Key)
		}
		sv := reflect.ValueOf(&out[i]).Elem()
		var rest []*ast.MappingValueNode
		for _, kv := range kvs {
			if keyName(kv.Key) != "keep" {
				rest = append(rest, kv)
				continue
			}
			if _, isList := d.resolve(kv.Value, ec+".keep").(*ast.SequenceNode); !isList {
				rest = append(rest, kv)
				continue
			}
			// The allow-list reports its problems as keep-fields.
			d.mark(ec+".keep-fields", ed+".keep", kv.Key)
			d.decodeValue(kv.Value, sv.FieldByName("KeepFields"), ec+".keep-fields", ed+".keep")
		}
		d.decodeStruct(rest, sv, ec, ed)
	}
	v.Set(reflect.ValueOf(out))
}

// anchorSteps makes the files processors read (redact's hash key)
// absolute under the install root, as every other path of the config.
func anchorSteps(steps []processing.Step, home string) {
	for i := range steps {
		if r := steps[i].Redact; r != nil && r.HashKeyFile != "" {
			r.HashKeyFile = paths.Resolve(home, r.HashKeyFile)
		}
	}
}

// withAgentSteps is an input's processors followed by the agent's.
func withAgentSteps(own, agent []processing.Step) []processing.Step {
	if len(own)+len(agent) == 0 {
		return nil
	}
	return append(slices.Clone(own), agent...)
}
