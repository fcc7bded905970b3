package api

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/edge-agent/edge-agent/connector/component"
)

// Input is one input in the status document: what it said of itself
// (component.Description) under its id and type. Its figures, fields and
// records sit beside id and type under their own keys ("lines_read",
// "cursor", "collectors"), so the document's field names are the input's;
// the api knows none of them.
type Input struct {
	// ID is set in Status.Inputs only.
	ID   string
	Type string
	// Values are its figures, in the order it gave them (a figure marked
	// OmitZero is left out while 0).
	Values []Figure
	// Texts are its named strings; empty ones are left out.
	Texts []component.Text
	// Summary and Lines are for people (status, top).
	Summary string
	Lines   []Line
	// Files are the files it tracks; nil when it reads no files, empty
	// when it reads files and tracks none now. Status.Inputs only
	// (Status.Files lists them all).
	Files []File
	// Records are its structured parts (a relay's collectors), as JSON.
	Records []Record
}

// Figure is one figure of an input.
type Figure struct {
	Key string
	N   int64
}

// Line is one line of detail for people: "Label: Text" ("collector: …").
// A Brief line is shown by top too.
type Line struct {
	Label string `json:"label,omitempty"`
	Text  string `json:"text"`
	Brief bool   `json:"brief,omitempty"`
}

// Record is a structured part of an input's document.
type Record struct {
	Key  string
	JSON json.RawMessage
}

// Value returns the figure under key and whether the input reports it.
func (in Input) Value(key string) (int64, bool) {
	for _, f := range in.Values {
		if f.Key == key {
			return f.N, true
		}
	}
	return 0, false
}

// ListsFiles reports whether an input reads files (it may track none now).
func (s Status) ListsFiles() bool {
	for _, in := range s.Inputs {
		if in.Files != nil {
			return true
		}
	}
	return false
}

// The document's own keys of an input; a Description's keys differ.
const (
	keyID      = component.KeyID
	keyType    = component.KeyType
	keySummary = component.KeySummary
	keyLines   = component.KeyLines
	keyFiles   = component.KeyFiles
)

func figures(vs []component.Value) []Figure {
	var out []Figure
	for _, v := range vs {
		if v.Key == "" || (v.OmitZero && v.N == 0) {
			continue
		}
		out = append(out, Figure{Key: v.Key, N: v.N})
	}
	return out
}

func inputDoc(id, typ string, d component.Description) Input {
	doc := Input{ID: id, Type: typ, Values: figures(d.Values), Summary: d.Summary, Files: fileDocs(d.Files)}
	for _, t := range d.Texts {
		if t.Value != "" {
			doc.Texts = append(doc.Texts, t)
		}
	}
	for _, l := range d.Lines {
		doc.Lines = append(doc.Lines, Line(l))
	}
	for _, r := range d.Records {
		raw, err := json.Marshal(r.Value)
		if err != nil {
			// A record that cannot be encoded is a bug of its input: say
			// so in the document rather than drop the rest.
			raw, _ = json.Marshal(map[string]string{"error": err.Error()})
		}
		doc.Records = append(doc.Records, Record{Key: r.Key, JSON: raw})
	}
	return doc
}

// fileDocs keeps nil apart from empty (see Input.Files).
func fileDocs(fs []component.FileStatus) []File {
	if fs == nil {
		return nil
	}
	out := make([]File, 0, len(fs))
	for _, f := range fs {
		out = append(out, File{Path: f.Path, Identity: f.Identity, Offset: f.Offset, Size: f.Size, Lag: f.Lag, Open: f.Open})
	}
	return out
}

// MarshalJSON writes one object: id (when set), type, the figures, texts
// and records under their keys, then summary, lines and files.
func (in Input) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	add := func(key string, v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode input %s: %s: %w", in.ID, key, err)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(raw)
		return nil
	}
	var err error
	try := func(key string, v any) {
		if err == nil {
			err = add(key, v)
		}
	}
	if in.ID != "" {
		try(keyID, in.ID)
	}
	try(keyType, in.Type)
	for _, f := range in.Values {
		try(f.Key, f.N)
	}
	for _, t := range in.Texts {
		try(t.Key, t.Value)
	}
	for _, r := range in.Records {
		try(r.Key, r.JSON)
	}
	if in.Summary != "" {
		try(keySummary, in.Summary)
	}
	if len(in.Lines) > 0 {
		try(keyLines, in.Lines)
	}
	if in.Files != nil {
		try(keyFiles, in.Files)
	}
	if err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes, keeping the order of the
// keys: a number is a figure, a string a text, an array or object a record.
func (in *Input) UnmarshalJSON(data []byte) error {
	*in = Input{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("decode input: want an object, got %.40q", data)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("decode input: %w", err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("decode input: %s: %w", key, err)
		}
		if err := in.set(key, raw); err != nil {
			return fmt.Errorf("decode input %s: %s: %w", in.ID, key, err)
		}
	}
	return nil
}

func (in *Input) set(key string, raw json.RawMessage) error {
	switch key {
	case keyID:
		return json.Unmarshal(raw, &in.ID)
	case keyType:
		return json.Unmarshal(raw, &in.Type)
	case keySummary:
		return json.Unmarshal(raw, &in.Summary)
	case keyLines:
		return json.Unmarshal(raw, &in.Lines)
	case keyFiles:
		if err := json.Unmarshal(raw, &in.Files); err != nil {
			return err
		}
		if in.Files == nil {
			in.Files = []File{}
		}
		return nil
	}
	switch raw = bytes.TrimSpace(raw); {
	case len(raw) == 0:
		return fmt.Errorf("no value")
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		in.Texts = append(in.Texts, component.Text{Key: key, Value: s})
	case raw[0] == '[' || raw[0] == '{' || string(raw) == "null" || string(raw) == "true" || string(raw) == "false":
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return err
		}
		in.Records = append(in.Records, Record{Key: key, JSON: c.Bytes()})
	default:
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil {
			return err
		}
		in.Values = append(in.Values, Figure{Key: key, N: n})
	}
	return nil
}
