package component

import (
	"fmt"
	"sort"
	"strings"
)

// Typed is a factory of one part type, named by its `type` in agent.yaml.
type Typed interface {
	Type() string
}

// Registry maps `type` values to the factories of one kind of part
// (inputs, outputs). Build it in main; there is no package-level registry.
// It is not changed after NewRegistry, so it is safe for concurrent use.
type Registry[F Typed] struct {
	unknown   error
	factories map[string]F
}

// NewRegistry returns a registry holding factories. Get wraps unknown
// (the kind's sentinel, such as "unknown input type") when asked for a
// type it does not hold. A later factory of the same type replaces an
// earlier one.
func NewRegistry[F Typed](unknown error, factories ...F) *Registry[F] {
	r := &Registry[F]{unknown: unknown, factories: make(map[string]F, len(factories))}
	for _, f := range factories {
		r.factories[strings.ToLower(f.Type())] = f
	}
	return r
}

// Get returns the factory of typ (case-insensitive, spaces around it
// ignored); an unregistered type is an error wrapping the registry's
// sentinel and listing the known types.
func (r *Registry[F]) Get(typ string) (F, error) {
	f, ok := r.factories[strings.ToLower(strings.TrimSpace(typ))]
	if !ok {
		var zero F
		return zero, fmt.Errorf("%w %q (known: %s)", r.unknown, typ, strings.Join(r.Types(), ", "))
	}
	return f, nil
}

// Types lists the registered types, sorted.
func (r *Registry[F]) Types() []string {
	out := make([]string, 0, len(r.factories))
	for t := range r.factories {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
