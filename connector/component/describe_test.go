package component

import "testing"

// With appends the second description's parts and leaves both operands
// as they were.
func TestDescriptionWith(t *testing.T) {
	a := Description{Values: make([]Value, 1, 4), Summary: "a", Lines: []Line{{Text: "a"}}}
	b := Description{Values: []Value{{Key: "b", N: 2}}, Summary: "b", Lines: []Line{{Text: "b", Brief: true}},
		Records: []Record{{Key: "r"}}, Files: []FileStatus{{Path: "x"}}}
	got := a.With(b)
	if len(got.Values) != 2 || got.Values[1].Key != "b" || len(got.Lines) != 2 || !got.Lines[1].Brief ||
		len(got.Records) != 1 || got.Summary != "a" || got.Files != nil {
		t.Fatalf("With = %+v", got)
	}
	if a.With(Description{Values: []Value{{Key: "c"}}}).Values[1].Key != "c" || got.Values[1].Key != "b" {
		t.Fatal("With wrote into the first operand's spare capacity")
	}
}
