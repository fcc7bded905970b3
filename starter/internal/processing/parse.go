package processing

import (
	"encoding/csv"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/edge-agent/edge-agent/connector/syslog/message"
)

// parseErrorField marks an event whose text did not parse (on-error: keep).
const parseErrorField = "_parse_error"

// maxParseBytes bounds the text a parser takes: a longer value is an
// error, so no line can make a parser's work or output unbounded.
const maxParseBytes = 1 << 20

// Formats parse knows.
var parseFormats = []string{"json", "logfmt", "regex", "csv", "syslog"}

type parser struct {
	n       *counts
	format  string
	field   path
	target  path
	onError OnError
	parse   func(string) (any, error)
}

func newParser(i int, c *ParseConfig, n *counts) (processor, error) {
	p := &parser{n: n, format: strings.ToLower(c.Format), onError: c.OnError}
	var errs []error
	field, target := c.Field, c.Target
	if field == "" {
		field = defaultField
	}
	if target == "" {
		target = field
	}
	if err := validPath(field); err != nil {
		errs = append(errs, stepError(i, "parse.field", err))
	}
	if err := validPath(target); err != nil {
		errs = append(errs, stepError(i, "parse.target", err))
	}
	p.field, p.target = parsePath(field), parsePath(target)
	switch p.onError {
	case "":
		p.onError = OnErrorKeep
	case OnErrorKeep, OnErrorDrop:
	default:
		errs = append(errs, stepError(i, "parse.on-error", fmt.Errorf("%q: use keep or drop", c.OnError)))
	}
	switch p.format {
	case "json":
		p.parse = readJSONString
	case "logfmt":
		p.parse = parseLogfmt
	case "syslog":
		p.parse = parseSyslog
	case "regex":
		re, err := compilePattern(c.Pattern)
		if err != nil {
			errs = append(errs, stepError(i, "parse.pattern", err))
			break
		}
		if !hasNamedGroup(re) {
			errs = append(errs, stepError(i, "parse.pattern", errors.New("has no named group (?P<name>…): nothing would be extracted")))
			break
		}
		p.parse = regexParser(re)
	case "csv":
		if len(c.Columns) == 0 {
			errs = append(errs, stepError(i, "parse.columns", errors.New("csv needs the column names")))
		}
		delim := ','
		if c.Delimiter != "" {
			r, size := utf8.DecodeRuneInString(c.Delimiter)
			if size != len(c.Delimiter) || r == '"' || r == '\r' || r == '\n' || r == utf8.RuneError {
				errs = append(errs, stepError(i, "parse.delimiter", fmt.Errorf("%q: one character, not a quote or a line break", c.Delimiter)))
			}
			delim = r
		}
		p.parse = csvParser(c.Columns, delim)
	case "":
		errs = append(errs, stepError(i, "parse.format", fmt.Errorf("missing: one of %s", strings.Join(parseFormats, ", "))))
	default:
		errs = append(errs, stepError(i, "parse.format", fmt.Errorf("%q: use one of %s", c.Format, strings.Join(parseFormats, ", "))))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *parser) counts() *counts { return p.n }

func (p *parser) runsTagged() bool { return p.format == "json" }

func (p *parser) apply(it *item, _ time.Time) verdict {
	if it.ev.tagged && p.format == "json" {
		return p.applyTagged(it)
	}
	fields := it.ev.mapFields()
	v, ok := p.field.get(fields)
	s, isText := v.(string)
	var out any
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("no field %s", p.field)
	case !isText:
		err = fmt.Errorf("field %s is not text", p.field)
	case len(s) > maxParseBytes:
		err = fmt.Errorf("%d bytes, more than %d", len(s), maxParseBytes)
	case p.format == "json" && it.spare != nil:
		// An object is read into the map the chain kept from an event
		// before; anything else as by p.parse.
		var isObj bool
		if isObj, err = readObjectStringInto(s, it.spare); !isObj {
			out, err = p.parse(s)
		} else if err != nil {
			clear(it.spare)
		} else {
			out, it.spare = it.spare, nil
		}
	default:
		out, err = p.parse(s)
	}
	if err != nil {
		p.n.errs.Add(1)
		if p.onError == OnErrorDrop {
			return dropped
		}
		fields[parseErrorField] = p.format + ": " + err.Error()
		it.ev.dirty = true
		return pass
	}
	p.target.set(fields, out)
	it.ev.dirty = true
	return pass
}

// applyTagged is apply for json on the tagged model.
func (p *parser) applyTagged(it *item) verdict {
	top := &it.ev.top
	v, ok := p.field.getNode(top)
	var out node
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("no field %s", p.field)
	case v.kind != kindString:
		err = fmt.Errorf("field %s is not text", p.field)
	case len(v.s) > maxParseBytes:
		err = fmt.Errorf("%d bytes, more than %d", len(v.s), maxParseBytes)
	default:
		out, err = readDoc(v.s, &it.store)
	}
	if err != nil {
		p.n.errs.Add(1)
		if p.onError == OnErrorDrop {
			return dropped
		}
		top.put(parseErrorField, stringNode(p.format+": "+err.Error()))
		it.ev.dirty = true
		return pass
	}
	p.target.setNode(top, out)
	it.ev.dirty = true
	return pass
}

// parseJSON takes one JSON value; an object or not, it replaces the text.
// Errors give the byte offset, never the text.
func parseJSON(s string) (any, error) {
	return readJSONString(s)
}

// parseLogfmt reads key=value pairs (values bare or double-quoted with
// backslash escapes); a bare key is true.
func parseLogfmt(s string) (any, error) {
	out := make(map[string]any)
	i := 0
	for i < len(s) {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			break
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' && s[i] != '\t' {
			if s[i] == '"' {
				return nil, fmt.Errorf("quote in a key at byte %d", i)
			}
			i++
		}
		key := s[start:i]
		if i >= len(s) || s[i] != '=' {
			out[key] = true
			continue
		}
		if key == "" {
			return nil, fmt.Errorf("empty key at byte %d", start)
		}
		i++ // '='
		if i < len(s) && s[i] == '"' {
			var b strings.Builder
			j := i + 1
			closed := false
			for j < len(s) {
				c := s[j]
				if c == '\\' && j+1 < len(s) {
					switch s[j+1] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					default:
						b.WriteByte(s[j+1])
					}
					j += 2
					continue
				}
				if c == '"' {
					closed = true
					j++
					break
				}
				b.WriteByte(c)
				j++
			}
			if !closed {
				return nil, fmt.Errorf("unterminated quote from byte %d", i)
			}
			out[key] = b.String()
			i = j
			continue
		}
		vs := i
		for i < len(s) && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		out[key] = s[vs:i]
	}
	if len(out) == 0 {
		return nil, errors.New("no key=value pair")
	}
	return out, nil
}

func regexParser(re *regexp.Regexp) func(string) (any, error) {
	names := re.SubexpNames()
	return func(s string) (any, error) {
		m := re.FindStringSubmatchIndex(s)
		if m == nil {
			return nil, errors.New("pattern does not match")
		}
		out := make(map[string]any)
		for g, name := range names {
			if name == "" || m[2*g] < 0 {
				continue
			}
			out[name] = s[m[2*g]:m[2*g+1]]
		}
		return out, nil
	}
}

func csvParser(columns []string, delim rune) func(string) (any, error) {
	return func(s string) (any, error) {
		r := csv.NewReader(strings.NewReader(s))
		r.Comma = delim
		r.FieldsPerRecord = -1
		r.LazyQuotes = true
		rec, err := r.Read()
		if err != nil {
			return nil, errors.New("not one CSV record")
		}
		if _, err := r.Read(); err == nil {
			return nil, errors.New("more than one CSV record")
		}
		if len(rec) > len(columns) {
			return nil, fmt.Errorf("%d values, %d columns", len(rec), len(columns))
		}
		out := make(map[string]any, len(rec))
		for k, v := range rec {
			out[columns[k]] = v
		}
		return out, nil
	}
}

// parseSyslog reads an RFC 5424 or RFC 3164 line into the fields the
// syslog input gives its events.
func parseSyslog(s string) (any, error) {
	m, err := message.Parse([]byte(s), message.FormatAuto)
	if err != nil {
		return nil, err
	}
	out := map[string]any{
		"facility": int64(m.Facility),
		"severity": int64(m.Severity),
		"message":  strings.ToValidUTF8(string(m.Msg), "\uFFFD"),
	}
	opt := func(k string, b []byte) {
		if b != nil {
			out[k] = strings.ToValidUTF8(string(b), "\uFFFD")
		}
	}
	opt("timestamp", m.Timestamp)
	opt("hostname", m.Hostname)
	opt("appname", m.AppName)
	opt("procid", m.ProcID)
	opt("msgid", m.MsgID)
	if len(m.SD) > 0 {
		sd := make(map[string]any, len(m.SD))
		for _, e := range m.SD {
			params := make(map[string]any, len(e.Params))
			for _, p := range e.Params {
				params[strings.ToValidUTF8(string(p.Name), "\uFFFD")] = strings.ToValidUTF8(string(p.Value), "\uFFFD")
			}
			sd[strings.ToValidUTF8(string(e.ID), "\uFFFD")] = params
		}
		out["structured_data"] = sd
	}
	return out, nil
}

// compilePattern compiles an operator's regular expression, bounded.
func compilePattern(src string) (*regexp.Regexp, error) {
	if src == "" {
		return nil, errors.New("missing: give a regular expression")
	}
	if len(src) > maxPatternBytes {
		return nil, fmt.Errorf("pattern of %d bytes; at most %d", len(src), maxPatternBytes)
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("not a regular expression (Go RE2 syntax): %w", err)
	}
	return re, nil
}

func hasNamedGroup(re *regexp.Regexp) bool {
	for _, n := range re.SubexpNames() {
		if n != "" {
			return true
		}
	}
	return false
}
