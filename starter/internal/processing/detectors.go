package processing

import (
	"net/netip"
	"regexp"
	"strings"
)

// detector finds one kind of secret in text. maybe is a cheap test that
// must hold for any match, so most text never reaches the expression;
// valid, when set, confirms a match (checksums); group is the
// subexpression to redact (0: the whole match).
type detector struct {
	name  string
	re    *regexp.Regexp
	maybe func(string) bool
	valid func(string) bool
	group int
	// find, when set, replaces re: the [start, end) of each candidate.
	find func(s string) [][2]int
}

// matches are the [start, end) of the text to redact, valid ones only.
func (d *detector) matches(s string) [][2]int {
	var out [][2]int
	if d.find != nil {
		out = d.find(s)
	} else {
		for _, loc := range d.re.FindAllStringSubmatchIndex(s, -1) {
			if loc[2*d.group] >= 0 {
				out = append(out, [2]int{loc[2*d.group], loc[2*d.group+1]})
			}
		}
	}
	if d.valid == nil {
		return out
	}
	kept := out[:0]
	for _, m := range out {
		if d.valid(s[m[0]:m[1]]) {
			kept = append(kept, m)
		}
	}
	return kept
}

// secretNames are the key names secret-pair redacts, in text
// ("password=…") and as object keys.
const secretNames = `password|passwd|pwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key|token|auth[_-]?token|private[_-]?key`

var secretKeyRE = regexp.MustCompile(`(?i)^(?:` + secretNames + `)$`)

// builtinDetectors are the detectors redact knows by name, in the order
// they run: the wider ones first, so a private key's body is not also
// taken apart by others.
func builtinDetectors() []*detector {
	return []*detector{
		{name: "private-key", re: regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`),
			maybe: func(s string) bool { return strings.Contains(s, "PRIVATE KEY-----") }},
		{name: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`),
			maybe: func(s string) bool { return strings.Contains(s, "eyJ") }},
		{name: "bearer-token", re: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{8,}=*)`), group: 1,
			maybe: func(s string) bool { return containsFold(s, "bearer") }},
		{name: "aws-access-key", re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b`),
			maybe: func(s string) bool { return strings.Contains(s, "A") && hasAWSPrefix(s) }},
		{name: "secret-pair", re: regexp.MustCompile(`(?i)\b(?:` + secretNames + `)"?\s*[=:]\s*("[^"]*"|'[^']*'|[^\s,;&"']+)`), group: 1,
			maybe: func(s string) bool { return strings.ContainsAny(s, "=:") }},
		{name: "email", find: findEmails, maybe: func(s string) bool { return strings.IndexByte(s, '@') >= 0 }},
		{name: "iban", re: regexp.MustCompile(`\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b`),
			maybe: func(s string) bool { return digits(s) >= 4 }, valid: ibanValid},
		{name: "credit-card", find: findCards, maybe: func(s string) bool { return digitRun(s, 13) }},
		{name: "ipv4", re: regexp.MustCompile(`\b(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\b`),
			maybe: func(s string) bool { return strings.Count(s, ".") >= 3 }},
		{name: "ipv6", re: regexp.MustCompile(`[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:(?:\d{1,3}\.){3}\d{1,3})?`),
			maybe: func(s string) bool { return strings.Count(s, ":") >= 2 }, valid: ipv6Valid},
	}
}

// DetectorNames lists the built-in detectors.
func DetectorNames() []string {
	var out []string
	for _, d := range builtinDetectors() {
		out = append(out, d.name)
	}
	return out
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func hasAWSPrefix(s string) bool {
	for _, p := range []string{"AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func digits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}

// digitRun reports n digits in one run of groups split by single spaces
// or dashes, as findCards takes a card: text with digits spread among
// words (k12=34567 v=8) does not reach the scan.
func digitRun(s string, n int) bool {
	// Such a run spans n bytes or more of digits, spaces and dashes: when
	// the last byte of a window of n is none of them, no run starts in the
	// window, so most text is looked at one byte in n.
	for i := 0; i+n <= len(s); {
		j := i + n - 1
		if !isCardByte(s[j]) {
			i = j + 1
			continue
		}
		lo, hi := j, j+1
		for lo > i && isCardByte(s[lo-1]) {
			lo--
		}
		for hi < len(s) && isCardByte(s[hi]) {
			hi++
		}
		if hi-lo >= n && digitRunIn(s[lo:hi], n) {
			return true
		}
		i = hi + 1
	}
	return false
}

func isCardByte(c byte) bool { return isDigit(c) || c == ' ' || c == '-' }

// digitRunIn is digitRun by a look at every byte.
func digitRunIn(s string, n int) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isDigit(c) {
			if run++; run >= n {
				return true
			}
			continue
		}
		if (c == ' ' || c == '-') && run > 0 && i+1 < len(s) && isDigit(s[i+1]) {
			continue
		}
		run = 0
	}
	return false
}

// luhnValid: 13 to 19 digits passing the Luhn check, so order numbers
// and other long numbers are left alone.
func luhnValid(m string) bool {
	sum, n, double := 0, 0, false
	for i := len(m) - 1; i >= 0; i-- {
		c := m[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if double {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
		n++
	}
	return n >= 13 && n <= 19 && sum%10 == 0
}

// ibanValid checks the ISO 13616 mod-97 checksum.
func ibanValid(m string) bool {
	s := strings.ReplaceAll(m, " ", "")
	if len(s) < 15 || len(s) > 34 {
		return false
	}
	s = s[4:] + s[:4]
	rem := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			rem = (rem*100 + int(c-'A'+10)) % 97
		default:
			return false
		}
	}
	return rem == 1
}

func ipv6Valid(m string) bool {
	a, err := netip.ParseAddr(m)
	return err == nil && a.Is6() && !a.Is4In6() || err == nil && strings.Count(m, ":") >= 2 && a.Is4In6()
}

var emailRE = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)

func isLocalChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._%+-", c) >= 0
}

func isDomainChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-'
}

// findEmails looks around each '@' only, then lets the expression judge
// that stretch: the text between addresses is never scanned by it.
func findEmails(s string) [][2]int {
	var out [][2]int
	from := 0
	for {
		at := strings.IndexByte(s[from:], '@')
		if at < 0 {
			return out
		}
		at += from
		lo, hi := at, at+1
		for lo > from && isLocalChar(s[lo-1]) {
			lo--
		}
		for hi < len(s) && isDomainChar(s[hi]) {
			hi++
		}
		if loc := emailRE.FindStringIndex(s[lo:hi]); loc != nil {
			out = append(out, [2]int{lo + loc[0], lo + loc[1]})
		}
		from = hi
		if from <= at {
			from = at + 1
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordChar(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// maxCardGroups bounds the digit groups findCards takes as one run.
const maxCardGroups = 40

// findCards finds card numbers: 13 to 19 digits, written together or in
// groups split by single spaces or dashes, passing the Luhn check, not
// inside a longer word. In a run of groups longer than a card, each
// group may start one.
func findCards(s string) [][2]int {
	var out [][2]int
	// groups: the [start, end) of each digit group of a run; at most
	// maxCardGroups, so they fit on the stack.
	var buf [maxCardGroups][2]int
	for i := 0; i < len(s); {
		if !isDigit(s[i]) || i > 0 && isWordChar(s[i-1]) {
			i++
			continue
		}
		groups := buf[:0]
		j := i
		for {
			g := j
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			groups = append(groups, [2]int{g, j})
			if j+1 < len(s) && (s[j] == ' ' || s[j] == '-') && isDigit(s[j+1]) && len(groups) < maxCardGroups {
				j++
				continue
			}
			break
		}
		end := j
		for k := 0; k < len(groups); {
			n, found := 0, -1
			for m := k; m < len(groups); m++ {
				n += groups[m][1] - groups[m][0]
				if n > 19 {
					break
				}
				last := groups[m][1]
				if n >= 13 && (last == len(s) || !isWordChar(s[last])) && luhnValid(s[groups[k][0]:last]) {
					found = m
				}
			}
			if found >= 0 {
				out = append(out, [2]int{groups[k][0], groups[found][1]})
				k = found + 1
				continue
			}
			k++
		}
		i = end
		for i < len(s) && isWordChar(s[i]) {
			i++
		}
	}
	return out
}
