package config

import (
	"errors"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/edge-agent/edge-agent/starter/internal/output"
)

// defaultOutputType is used when output.type is omitted (Java parity).
const defaultOutputType = output.TypeConsole

// decodeOutput decodes the `output` section through the registry:
// output.type picks the factory, whose default config receives every key
// but type, id and rate-limit (the agent's, whatever the type), which are
// decoded here. kv is nil when the file has no
// output section: the default type's defaults apply.
func (d *decoder) decodeOutput(kv *ast.MappingValueNode, reg *output.Registry, cfg *Config) {
	var kvs []*ast.MappingValueNode
	if kv != nil {
		if n := d.resolve(kv.Value, "output"); n != nil {
			var ok bool
			if kvs, ok = entries(n); !ok {
				d.typeError("output", "a mapping", n)
				return
			}
		}
	}
	typ := cfg.Output.Type
	var rest []*ast.MappingValueNode
	for _, e := range kvs {
		switch name := keyName(e.Key); name {
		case "type", "id":
			key := "output." + name
			d.mark(key, key, e.Key)
			v := d.resolve(e.Value, key)
			if v == nil {
				continue
			}
			s, ok := d.scalar(v, key, "a string")
			if !ok {
				continue
			}
			if s = strings.TrimSpace(s); name == "id" {
				cfg.Output.ID = s
			} else if s != "" {
				typ = strings.ToLower(s)
			}
		case "rate-limit":
			d.mark("output.rate-limit", "output.rate-limit", e.Key)
			d.decodeValue(e.Value, reflect.ValueOf(&cfg.Output.RateLimit).Elem(), "output.rate-limit", "output.rate-limit")
		default:
			rest = append(rest, e)
		}
	}

	f, err := reg.Get(typ)
	if err != nil {
		d.fail("output.type", err)
		return
	}
	ocfg := f.NewDefaultConfig()
	rv := reflect.ValueOf(ocfg)
	if ocfg == nil || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		// A plug-in bug, not a user error; still reported, not panicked.
		d.failf("output", "output type %q: its factory's default config is not a pointer to a struct", typ)
		return
	}
	d.decodeStruct(rest, rv.Elem(), "output", "output")
	cfg.Output.Type, cfg.Output.Options = typ, ocfg
}

// readSecrets reads the files the output names for its secrets (token-file,
// aes-secret-key-file). The output lists only those its mode uses: a stale
// path in an unused key must not stop the agent. The file wins over the
// inline value.
func (d *decoder) readSecrets(cfg *Config, readFile func(string) ([]byte, error)) {
	sf, ok := cfg.Output.Options.(output.SecretFiles)
	if !ok {
		return
	}
	for _, s := range sf.SecretFiles() {
		if s.File == "" {
			continue
		}
		key, fileKey := "output."+s.Key, "output."+s.FileKey
		if *s.Value != "" {
			d.warn(key, "%s is ignored: %s is set", key, fileKey)
		}
		*s.Value = d.readSecret(fileKey, s.File, readFile)
	}
}

// adviseOutput turns the output's advice into warnings at their keys.
func (d *decoder) adviseOutput(cfg *Config) {
	a, ok := cfg.Output.Options.(output.Adviser)
	if !ok {
		return
	}
	for _, e := range a.Advice() {
		key := "output"
		var ke keyedError
		if errors.As(e, &ke) {
			key, e = join("output", ke.FieldKey()), ke.Unwrap()
		}
		d.warn(key, "%s", e.Error())
	}
}
