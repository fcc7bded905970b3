package message

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Message is one syslog message split into its fields. Byte slices point
// into the parsed buffer; a nil field was absent ("-" in RFC 5424).
type Message struct {
	// Format is FormatRFC5424 or FormatRFC3164.
	Format             string
	Facility, Severity int
	// Timestamp is the timestamp as sent; Time is its value when it names
	// an instant (RFC 5424, or RFC 3339 inside RFC 3164), else zero:
	// RFC 3164's "Mmm dd hh:mm:ss" has neither a year nor a zone.
	Timestamp []byte
	Time      time.Time
	Hostname  []byte
	AppName   []byte
	ProcID    []byte
	MsgID     []byte
	SD        []SDElement
	Msg       []byte
}

// SDElement is one RFC 5424 structured data element.
type SDElement struct {
	ID     []byte
	Params []SDParam
}

// SDParam is one PARAM-NAME="PARAM-VALUE" pair; Value is unescaped.
type SDParam struct {
	Name, Value []byte
}

// Format names.
const (
	FormatAuto    = "auto"
	FormatRFC3164 = "rfc3164"
	FormatRFC5424 = "rfc5424"
)

// Parse errors. Each message that fails to parse is still delivered, raw,
// with the error's text in its "parse_error" field. The texts name the
// field and an offset or a length, never the bytes: a sender may put
// anything in a message, and an error can travel further than the event.
var (
	ErrNoPRI      = errors.New("no <PRI> at the start")
	ErrBadPRI     = errors.New("<PRI> is not a number from 0 to 191")
	ErrNotRFC5424 = errors.New("not RFC 5424: no version after <PRI>")
	ErrHeader     = errors.New("RFC 5424 header field")
	ErrSD         = errors.New("RFC 5424 structured data")
)

// RFC 5424 header field limits (section 6).
const (
	maxHostname = 255
	maxAppName  = 48
	maxProcID   = 128
	maxMsgID    = 32
	maxSDName   = 32
)

var bom = []byte{0xEF, 0xBB, 0xBF}

// Parse parses b in the given format; FormatAuto takes RFC 5424 when a
// version digit follows the <PRI>, RFC 3164 otherwise.
func Parse(b []byte, format string) (Message, error) {
	switch format {
	case FormatRFC5424:
		return ParseRFC5424(b)
	case FormatRFC3164:
		return ParseRFC3164(b)
	}
	if looksRFC5424(b) {
		return ParseRFC5424(b)
	}
	return ParseRFC3164(b)
}

// WellFormed reports whether msg, parsed by Parse into m with perr, is
// what strict mode keeps: an RFC 5424 message that parsed, or an RFC 3164
// one with its <PRI> and a timestamp (the header a relay adds when it is
// missing, RFC 3164 section 4.3). Random bytes almost never are.
func WellFormed(msg []byte, m *Message, perr error) bool {
	if perr != nil {
		return false
	}
	if m.Format == FormatRFC5424 {
		return true
	}
	return len(msg) > 0 && msg[0] == '<' && m.Timestamp != nil
}

// looksRFC5424: "<PRI>" then a version (1 to 2 digits, not 0) then a space.
func looksRFC5424(b []byte) bool {
	i := bytes.IndexByte(b, '>')
	if len(b) == 0 || b[0] != '<' || i < 2 || i > 4 {
		return false
	}
	v := b[i+1:]
	switch {
	case len(v) >= 2 && isNonZeroDigit(v[0]) && v[1] == ' ':
		return true
	case len(v) >= 3 && isNonZeroDigit(v[0]) && isDigit(v[1]) && v[2] == ' ':
		return true
	}
	return false
}

func isDigit(c byte) bool        { return c >= '0' && c <= '9' }
func isNonZeroDigit(c byte) bool { return c >= '1' && c <= '9' }

// parsePRI reads "<N>" (N 0..191, at most 3 digits) and returns the rest.
func parsePRI(b []byte) (pri int, rest []byte, err error) {
	if len(b) == 0 || b[0] != '<' {
		return 0, b, ErrNoPRI
	}
	i := 1
	for i < len(b) && i <= 4 && isDigit(b[i]) {
		pri = pri*10 + int(b[i]-'0')
		i++
	}
	if i == 1 || i > 4 || i >= len(b) || b[i] != '>' || pri > 191 || (i > 2 && b[1] == '0') {
		return 0, b, ErrBadPRI
	}
	return pri, b[i+1:], nil
}

// ParseRFC5424 parses
//
//	<PRI>VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP SD [SP MSG]
//
// strictly as to the header (a field too long or holding a space fails)
// and keeps MSG as bytes, a leading BOM removed.
func ParseRFC5424(b []byte) (Message, error) {
	m := Message{Format: FormatRFC5424}
	pri, rest, err := parsePRI(b)
	if err != nil {
		return m, err
	}
	m.Facility, m.Severity = pri>>3, pri&7
	if !looksRFC5424(b) {
		return m, ErrNotRFC5424
	}
	rest = rest[bytes.IndexByte(rest, ' ')+1:]
	var ts []byte
	fields := []struct {
		dst  *[]byte
		name string
		max  int
	}{{&ts, "TIMESTAMP", 64}, {&m.Hostname, "HOSTNAME", maxHostname}, {&m.AppName, "APP-NAME", maxAppName},
		{&m.ProcID, "PROCID", maxProcID}, {&m.MsgID, "MSGID", maxMsgID}}
	for _, f := range fields {
		tok, after, ok := cutField(rest)
		if !ok {
			return m, fmt.Errorf("%w %s: missing (message ends early)", ErrHeader, f.name)
		}
		if len(tok) > f.max {
			return m, fmt.Errorf("%w %s: longer than %d bytes", ErrHeader, f.name, f.max)
		}
		for i, c := range tok {
			if c < 33 || c > 126 {
				return m, fmt.Errorf("%w %s: byte %d of %d is not printable ASCII", ErrHeader, f.name, i+1, len(tok))
			}
		}
		if !(len(tok) == 1 && tok[0] == '-') {
			*f.dst = tok
		}
		rest = after
	}
	if ts != nil {
		t, err := time.Parse(time.RFC3339Nano, string(ts))
		if err != nil {
			return m, fmt.Errorf("%w TIMESTAMP: %d bytes, not RFC 3339", ErrHeader, len(ts))
		}
		m.Timestamp, m.Time = ts, t
	}
	sd, rest, err := parseSD(rest)
	if err != nil {
		return m, err
	}
	m.SD = sd
	if len(rest) > 0 {
		if rest[0] != ' ' {
			return m, fmt.Errorf("%w: no space after it", ErrSD)
		}
		m.Msg = bytes.TrimPrefix(rest[1:], bom)
	}
	return m, nil
}

// cutField returns the bytes up to the next space and what follows it. A
// field must be followed by a space (the last header field by SD).
func cutField(b []byte) (tok, rest []byte, ok bool) {
	i := bytes.IndexByte(b, ' ')
	if i <= 0 {
		return nil, b, false
	}
	return b[:i], b[i+1:], true
}

// parseSD reads "-" or one or more [SD-ID *(SP PARAM-NAME="VALUE")].
func parseSD(b []byte) ([]SDElement, []byte, error) {
	if len(b) == 0 {
		return nil, b, fmt.Errorf("%w: missing (message ends early)", ErrSD)
	}
	if b[0] == '-' {
		return nil, b[1:], nil
	}
	var out []SDElement
	for len(b) > 0 && b[0] == '[' {
		nEl := len(out) + 1
		var el SDElement
		var err error
		el.ID, b, err = sdName(b[1:], "SD-ID")
		if err != nil {
			return nil, b, err
		}
		for {
			if len(b) == 0 {
				return nil, b, fmt.Errorf("%w: element %d not closed by ]", ErrSD, nEl)
			}
			if b[0] == ']' {
				b = b[1:]
				break
			}
			if b[0] != ' ' {
				return nil, b, fmt.Errorf("%w: element %d: want a space or ] after its name or a parameter", ErrSD, nEl)
			}
			var p SDParam
			p.Name, b, err = sdName(b[1:], "PARAM-NAME")
			if err != nil {
				return nil, b, err
			}
			if len(b) < 2 || b[0] != '=' || b[1] != '"' {
				return nil, b, fmt.Errorf("%w: element %d parameter %d: want =\"value\"", ErrSD, nEl, len(el.Params)+1)
			}
			p.Value, b, err = sdValue(b[2:])
			if err != nil {
				return nil, b, fmt.Errorf("%w: element %d parameter %d: %w", ErrSD, nEl, len(el.Params)+1, err)
			}
			el.Params = append(el.Params, p)
		}
		out = append(out, el)
	}
	if out == nil {
		return nil, b, fmt.Errorf("%w: want - or [", ErrSD)
	}
	return out, b, nil
}

// sdName reads an SD-NAME: 1 to 32 printable ASCII bytes but = SP ] ".
func sdName(b []byte, what string) (name, rest []byte, err error) {
	i := 0
	for i < len(b) && b[i] > 32 && b[i] < 127 && b[i] != '=' && b[i] != ']' && b[i] != '"' {
		i++
	}
	if i == 0 || i > maxSDName {
		return nil, b, fmt.Errorf("%w: %s must be 1 to %d printable ASCII bytes", ErrSD, what, maxSDName)
	}
	return b[:i], b[i:], nil
}

// sdValue reads up to the closing quote, unescaping \" \\ \]; any other
// backslash stays as it is (RFC 5424 section 6.3.3).
func sdValue(b []byte) (val, rest []byte, err error) {
	end := -1
	esc := false
	for i, c := range b {
		if c == '\\' && i+1 < len(b) {
			switch b[i+1] {
			case '"', '\\', ']':
				esc = true
			}
		}
		if c == '"' && !escaped(b, i) {
			end = i
			break
		}
	}
	if end < 0 {
		return nil, b, errors.New("value not closed by \"")
	}
	if !esc {
		return b[:end], b[end+1:], nil
	}
	out := make([]byte, 0, end)
	for i := 0; i < end; i++ {
		if b[i] == '\\' && i+1 < end {
			switch b[i+1] {
			case '"', '\\', ']':
				i++
			}
		}
		out = append(out, b[i])
	}
	return out, b[end+1:], nil
}

// escaped reports whether b[i] follows an odd number of backslashes.
func escaped(b []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// ParseRFC3164 parses the BSD format as senders write it in practice:
//
//	[<PRI>][TIMESTAMP SP [HOSTNAME SP]][TAG[[PID]]: ]MSG
//
// TIMESTAMP is "Mmm dd hh:mm:ss" (or RFC 3339, as rsyslog forwards);
// without one the rest is all MSG. A token after the timestamp that ends
// in ':' or holds '[' is the tag of a message without a hostname. A
// message without <PRI> gets user.notice (RFC 3164 section 4.3.3). It
// fails only on a malformed <PRI>.
func ParseRFC3164(b []byte) (Message, error) {
	m := Message{Format: FormatRFC3164, Facility: 1, Severity: 5}
	rest := b
	if len(b) > 0 && b[0] == '<' {
		pri, r, err := parsePRI(b)
		if err != nil {
			return m, err
		}
		m.Facility, m.Severity, rest = pri>>3, pri&7, r
	}
	ts, after, t := bsdTimestamp(rest)
	if ts == nil {
		m.Msg = rest
		return m, nil
	}
	m.Timestamp, m.Time, rest = ts, t, after
	if tok, after, ok := cutField(rest); ok && !bytes.HasSuffix(tok, []byte(":")) && bytes.IndexByte(tok, '[') < 0 {
		m.Hostname, rest = tok, after
	}
	m.AppName, m.ProcID, rest = bsdTag(rest)
	m.Msg = rest
	return m, nil
}

// bsdTimestamp recognises "Mmm dd hh:mm:ss " (day space- or zero-padded)
// or an RFC 3339 timestamp followed by a space.
func bsdTimestamp(b []byte) (ts, rest []byte, t time.Time) {
	if len(b) >= 16 && b[15] == ' ' && isMonth(b[:3]) && b[3] == ' ' &&
		(b[4] == ' ' || isDigit(b[4])) && isDigit(b[5]) && b[6] == ' ' &&
		isDigit(b[7]) && isDigit(b[8]) && b[9] == ':' && isDigit(b[10]) && isDigit(b[11]) &&
		b[12] == ':' && isDigit(b[13]) && isDigit(b[14]) {
		return b[:15], b[16:], time.Time{}
	}
	if len(b) >= 20 && isDigit(b[0]) && isDigit(b[1]) && isDigit(b[2]) && isDigit(b[3]) && b[4] == '-' {
		if i := bytes.IndexByte(b, ' '); i > 0 && i <= 40 {
			if t, err := time.Parse(time.RFC3339Nano, string(b[:i])); err == nil {
				return b[:i], b[i+1:], t
			}
		}
	}
	return nil, b, time.Time{}
}

var months = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

func isMonth(b []byte) bool {
	for _, mo := range months {
		if string(b) == mo {
			return true
		}
	}
	return false
}

// bsdTag reads TAG[PID]: at the start of b. Without a colon after it the
// token is not taken for a tag: everything stays MSG.
func bsdTag(b []byte) (app, pid, rest []byte) {
	i := 0
	for i < len(b) && i <= maxAppName && b[i] > 32 && b[i] < 127 && b[i] != '[' && b[i] != ':' {
		i++
	}
	if i == 0 || i > maxAppName || i == len(b) {
		return nil, nil, b
	}
	app = b[:i]
	j := i
	if b[j] == '[' {
		k := bytes.IndexByte(b[j:], ']')
		if k < 2 || k > maxProcID+1 {
			return nil, nil, b
		}
		pid = b[j+1 : j+k]
		j += k + 1
	}
	if j >= len(b) || b[j] != ':' {
		if pid == nil {
			return nil, nil, b
		}
		// "app[12] msg": the pid marks the tag even without a colon.
		return app, pid, bytes.TrimPrefix(b[j:], []byte(" "))
	}
	return app, pid, bytes.TrimPrefix(b[j+1:], []byte(" "))
}
