package file

import (
	"errors"
	"slices"
	"strings"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
)

// Host field names written by add-host-fields.
const (
	hostField    = "_host"
	agentIDField = "_agent_id"
)

// reservedFields are the keys every event object carries (reader_format.go) and
// those add-host-fields writes. A static field with one of these names is
// refused at config time: a JSON object with a key twice is parsed
// differently by different readers, so neither value can be relied on.
var reservedFields = []string{"_index", "_file", "_line", "_offset", "_ts", "payload", hostField, agentIDField}

// ErrNoHost is returned by New when add-host-fields is set but the agent
// passed no host name in input.Settings.
var ErrNoHost = errors.New("add-host-fields is set but no host name is known")

// validateFields checks fields' names.
func validateFields(fields map[string]string) []error {
	var errs []error
	for _, k := range slices.Sorted(mapsKeys(fields)) {
		switch {
		case strings.TrimSpace(k) == "":
			errs = append(errs, input.Errorf("fields", "field names must not be blank"))
		case slices.Contains(reservedFields, k):
			errs = append(errs, input.Errorf("fields."+k, "%q is a key the input writes itself (%s); choose another name",
				k, strings.Join(reservedFields, ", ")))
		}
	}
	return errs
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// extraFields returns what is appended to every event object after its
// payload value: `,"k":"v"` for each field, sorted by name so the bytes do
// not depend on map order, then the host fields. Nil when there is none,
// which keeps events byte-identical to the Java agent's.
func extraFields(fields map[string]string, hostFields bool, host, agentID string) []byte {
	var out []byte
	add := func(k, v string) {
		out = append(out, ',')
		out, _ = jsonenc.AppendString(out, []byte(k))
		out = append(out, ':')
		out, _ = jsonenc.AppendString(out, []byte(v))
	}
	for _, k := range slices.Sorted(mapsKeys(fields)) {
		add(k, fields[k])
	}
	if hostFields {
		add(hostField, host)
		add(agentIDField, agentID)
	}
	return out
}
