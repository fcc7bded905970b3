package agent

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/check"
)

func TestSettle(t *testing.T) {
	single := func(id string) []InputSpec {
		return []InputSpec{{ID: id, Type: "file", Key: "input", OptionalID: true}}
	}
	list := func(ids ...string) []InputSpec {
		out := make([]InputSpec, len(ids))
		for i, id := range ids {
			out[i] = InputSpec{ID: id, Type: "file"}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		specs []InputSpec
		known Known
		// want are the settled ids; record the id to record; warn a
		// fragment of the warning ("" none).
		want   []string
		record string
		warn   string
		// errKeys are the keys of the problems, when settling fails.
		errKeys []string
	}{
		{name: "input: with id, new WAL", specs: single("web"), known: Known{File: "f1"},
			want: []string{"web"}, record: "web"},
		{name: "input: without id takes the id file's", specs: single(""), known: Known{File: "f1"},
			want: []string{"f1"}, record: "f1"},
		{name: "input: without id, the WAL's wins over a regenerated id file", specs: single(""), known: Known{File: "f2", WAL: "f1"},
			want: []string{"f1"}, record: "f1", warn: "id file differs"},
		{name: "input: without id, id file and WAL agree", specs: single(""), known: Known{File: "f1", WAL: "f1"},
			want: []string{"f1"}, record: "f1"},
		{name: "input: without id, only the WAL knows it", specs: single(""), known: Known{WAL: "w"},
			want: []string{"w"}, record: "w"},
		{name: "input: with the WAL's id", specs: single("w"), known: Known{File: "f", WAL: "w"},
			want: []string{"w"}, record: "w"},
		{name: "input: id set in agent.yaml wins over the WAL's", specs: single("new"), known: Known{File: "f", WAL: "old"},
			want: []string{"new"}, record: "new", warn: "input.id differs"},
		{name: "input: without any id", specs: single(""), errKeys: []string{"input.id"}},
		{name: "inputs: ids as written, nothing recorded", specs: list("app", "db"), known: Known{File: "f", WAL: "w"},
			want: []string{"app", "db"}},
		{name: "inputs: entry without id", specs: list("app", ""), known: Known{File: "f"},
			errKeys: []string{"inputs[1].id"}},
		{name: "inputs: repeated ids", specs: list("app", "db", "app", "app"),
			errKeys: []string{"inputs[2].id", "inputs[3].id"}},
		{name: "input: beside inputs", specs: append(single(""), list("app")...), known: Known{File: "f"},
			errKeys: []string{"input"}},
		{name: "no input at all", errKeys: []string{"input"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.specs)
			st, err := Settle(tc.specs, tc.known)
			if !reflect.DeepEqual(tc.specs, before) {
				t.Errorf("Settle changed its argument: %+v", tc.specs)
			}
			if tc.errKeys != nil {
				if err == nil {
					t.Fatalf("settled %+v, want problems at %v", st.Specs, tc.errKeys)
				}
				if got := problemKeys(t, err); !slices.Equal(got, tc.errKeys) {
					t.Fatalf("problems at %v (%v), want %v", got, err, tc.errKeys)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, sp := range st.Specs {
				got = append(got, sp.ID)
			}
			if !slices.Equal(got, tc.want) || st.Record != tc.record {
				t.Errorf("ids %v record %q, want %v record %q", got, st.Record, tc.want, tc.record)
			}
			switch {
			case tc.warn == "" && st.Warning != "":
				t.Errorf("unexpected warning %q", st.Warning)
			case !strings.Contains(st.Warning, tc.warn):
				t.Errorf("warning %q, want one saying %q", st.Warning, tc.warn)
			}
			for i, sp := range st.Specs {
				if sp.written != tc.specs[i].ID {
					t.Errorf("%s: written id %q, want %q as configured", sp.key(i), sp.written, tc.specs[i].ID)
				}
			}
		})
	}
}

// problemKeys are the keys of a joined error's *check.FieldErrors, in order.
func problemKeys(t *testing.T, err error) []string {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var keys []string
	for _, e := range errs {
		var fe *check.FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a *check.FieldError", e)
		}
		keys = append(keys, fe.FieldKey())
	}
	return keys
}

// A reload keeps the id settled at start for the input that may leave it
// out (ids change only with a restart), and remembers the id as written,
// which Replace.Inputs names.
func TestKeepSettledIDs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old, next []InputSpec
		fileID    string
		want      []string
		written   []string
	}{
		{"input: keeps the settled id",
			[]InputSpec{{ID: "settled", OptionalID: true}}, []InputSpec{{OptionalID: true}}, "f",
			[]string{"settled"}, []string{""}},
		{"input: a new id waits for a restart",
			[]InputSpec{{ID: "settled", OptionalID: true}}, []InputSpec{{ID: "new", OptionalID: true}}, "f",
			[]string{"settled"}, []string{"new"}},
		{"inputs: to input: takes the id file's",
			[]InputSpec{{ID: "a"}}, []InputSpec{{OptionalID: true}}, "f",
			[]string{"f"}, []string{""}},
		{"inputs: ids as written",
			[]InputSpec{{ID: "settled", OptionalID: true}}, []InputSpec{{ID: "a"}, {ID: "b"}}, "f",
			[]string{"a", "b"}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.next)
			got := keepSettledIDs(tc.old, tc.next, tc.fileID)
			var ids, written []string
			for _, sp := range got {
				ids, written = append(ids, sp.ID), append(written, sp.written)
			}
			if !slices.Equal(ids, tc.want) || !slices.Equal(written, tc.written) {
				t.Errorf("ids %q written %q, want %q written %q", ids, written, tc.want, tc.written)
			}
			if !reflect.DeepEqual(tc.next, before) {
				t.Errorf("keepSettledIDs changed its argument: %+v", tc.next)
			}
		})
	}
}
