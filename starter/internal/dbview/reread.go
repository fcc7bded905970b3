package dbview

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/edge-agent/edge-agent/connector/input"
)

// RereadArgs name what to read again: the file (as the input names it:
// the path its globs match), the byte offset (default 0) and, when
// several file inputs run, the input's id ("" : the first that reads it).
type RereadArgs struct {
	Path   string `json:"path"`
	Offset *int64 `json:"offset,omitempty"`
	Input  string `json:"input,omitempty"`
}

// RereadForm is an example of the args, for error messages.
const RereadForm = `{"path":"/var/log/app.log","offset":0,"input":"app-logs"}`

// OffsetOr0 is the offset asked for, 0 when none was.
func (a RereadArgs) OffsetOr0() int64 {
	if a.Offset == nil {
		return 0
	}
	return *a.Offset
}

// Check reports a missing path or a negative offset.
func (a RereadArgs) Check() error {
	if strings.TrimSpace(a.Path) == "" {
		return fmt.Errorf(`reread: no "path": name the file to read again, e.g. %s`, RereadForm)
	}
	if a.Offset != nil && *a.Offset < 0 {
		return fmt.Errorf(`reread: "offset" %d is negative; give a byte offset of 0 or more`, *a.Offset)
	}
	return nil
}

// ParseRereadArgs decodes the reread task's JSON args strictly (an
// unknown key is refused) and checks them.
func ParseRereadArgs(raw []byte) (RereadArgs, error) {
	var a RereadArgs
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return a, fmt.Errorf(`reread needs args %s ("offset" and "input" optional)`, RereadForm)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("reread: malformed args: %w; send %s", err, RereadForm)
	}
	if dec.More() {
		return a, errors.New("reread: malformed args: more than one JSON value; send " + RereadForm)
	}
	return a, a.Check()
}

// RereadReport is what a reread did (input.RereadResult's figures):
// where reading restarts and how many bytes are delivered again
// (reread_bytes) or skipped (skipped_bytes: an offset past what was
// delivered).
type RereadReport struct {
	Input     string `json:"input"`
	Path      string `json:"path"`
	Identity  string `json:"identity"`
	Requested int64  `json:"requested_offset"`
	Offset    int64  `json:"offset"`
	// Aligned: the requested offset fell inside a line, so reading
	// restarts at the next line's start.
	Aligned bool `json:"aligned_to_next_line"`
	// NextLine is the number of the first line read again (from 1).
	NextLine int64 `json:"next_line"`
	Previous int64 `json:"previous_offset"`
	Size     int64 `json:"size"`
	Reread   int64 `json:"reread_bytes"`
	Skipped  int64 `json:"skipped_bytes"`
	// Note says in words what the figures mean.
	Note string `json:"note"`
}

// NewRereadReport is the report of input inputID's r.
func NewRereadReport(inputID string, r input.RereadResult) RereadReport {
	rep := RereadReport{Input: inputID, Path: r.Path, Identity: r.Identity, Requested: r.Requested, Offset: r.Start,
		Aligned: r.Aligned, NextLine: r.Line + 1, Previous: r.Previous, Size: r.Size, Reread: r.Reread, Skipped: r.Skipped}
	var b strings.Builder
	fmt.Fprintf(&b, "input %s reads %s again from byte %d (line %d)", inputID, r.Path, r.Start, r.Line+1)
	if r.Aligned {
		fmt.Fprintf(&b, ", the start of the line after offset %d, which fell inside a line", r.Requested)
	}
	switch {
	case r.Reread > 0:
		fmt.Fprintf(&b, ": %d bytes delivered before are delivered again", r.Reread)
	case r.Skipped > 0:
		fmt.Fprintf(&b, ": %d bytes not delivered yet are skipped", r.Skipped)
	default:
		b.WriteString(": nothing delivered before is delivered again")
	}
	rep.Note = b.String()
	return rep
}
