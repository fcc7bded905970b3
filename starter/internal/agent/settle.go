package agent

import (
	"errors"
	"fmt"

	"github.com/edge-agent/edge-agent/starter/internal/check"
)

// Known is what Settle is told of input ids besides the config.
type Known struct {
	// File is the identity file's input id ("" when there is none).
	File string
	// WAL is the input id the WAL recorded for the entry that may leave
	// its id out ("" for a new WAL, or one written by `inputs:` only).
	WAL string
}

// Settlement is what Settle decided.
type Settlement struct {
	// Specs are the entries in config order, every ID set.
	Specs []InputSpec
	// Record is the id to record in the WAL and the identity file for the
	// entry that may leave its id out; "" when no entry may.
	Record string
	// Warning, when not "", is a mismatch to log once the decision is
	// committed, with the ids involved in WarnAttrs.
	Warning   string
	WarnAttrs []any
}

// CheckInputs checks the entries as agent.yaml gives them: at least one;
// OptionalID (the single `input:` form) only alone; every other entry with
// an id, each id once. Each problem is a *check.FieldError keyed as in
// agent.yaml ("inputs[1].id"), joined.
func CheckInputs(specs []InputSpec) error {
	if len(specs) == 0 {
		return check.Errorf("input", "no input: add an input section, or an inputs list")
	}
	var errs []error
	first := make(map[string]int, len(specs))
	for i, sp := range specs {
		key := sp.key(i)
		switch {
		case sp.OptionalID && len(specs) > 1:
			errs = append(errs, check.Errorf(key, "input and inputs are both set; keep one: input for one input, inputs for a list of inputs with their own ids"))
		case sp.ID == "" && !sp.OptionalID:
			errs = append(errs, check.Errorf(key+".id", "every entry of inputs needs an id: it keys the entry's saved positions"))
		case sp.ID == "":
		case first[sp.ID] > 0:
			errs = append(errs, check.Errorf(key+".id", "id %q is also the id of %s; ids must be unique", sp.ID, specs[first[sp.ID]-1].key(first[sp.ID]-1)))
		default:
			first[sp.ID] = i + 1
		}
	}
	return errors.Join(errs...)
}

// Settle decides each input's id from the config (specs as agent.yaml
// gives them), the identity file and what the WAL knows. An id agent.yaml
// sets wins. An entry with OptionalID and no id takes the WAL's, so a lost
// or regenerated identity file never orphans saved positions, else the
// identity file's. Settle does no I/O: the caller records Record and logs
// Warning.
func Settle(specs []InputSpec, known Known) (Settlement, error) {
	if err := CheckInputs(specs); err != nil {
		return Settlement{}, err
	}
	out := Settlement{Specs: make([]InputSpec, len(specs))}
	for i, sp := range specs {
		sp.written = sp.ID
		if sp.OptionalID {
			id, warn, attrs := settleOptional(sp.ID, known)
			if id == "" {
				return Settlement{}, check.Errorf(sp.key(i)+".id", "no input id: set it in agent.yaml, or let the agent write its identity file")
			}
			sp.ID, out.Record, out.Warning, out.WarnAttrs = id, id, warn, attrs
		}
		out.Specs[i] = sp
	}
	return out, nil
}

// settleOptional is the id of the entry that may leave its id out.
func settleOptional(written string, known Known) (id, warning string, attrs []any) {
	switch {
	case known.WAL == "" && written != "":
		return written, "", nil
	case known.WAL == "":
		return known.File, "", nil
	case written == "" || written == known.WAL:
		if written == "" && known.File != "" && known.File != known.WAL {
			return known.WAL, "the input id from the id file differs from the one this WAL was written with; keeping the WAL's so saved positions still apply",
				[]any{"id_file_input_id", known.File, "input_id", known.WAL}
		}
		return known.WAL, "", nil
	default:
		return written, "input.id differs from the id this WAL was written with; positions saved under the old id are not used",
			[]any{"input_id", written, "wal_input_id", known.WAL}
	}
}

// key is where agent.yaml sets the entry ("input", "inputs[2]").
func (sp InputSpec) key(i int) string {
	if sp.Key != "" {
		return sp.Key
	}
	return fmt.Sprintf("inputs[%d]", i)
}
