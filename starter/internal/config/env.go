package config

import (
	"fmt"
	"strings"
)

// expandEnv replaces ${NAME} and ${NAME:-default} in a scalar value.
// ${NAME:-default} uses default when NAME is unset or empty (as in POSIX
// shells); ${NAME} with NAME unset is an error, because silently sending an
// empty token or path is worse than refusing to start. `$${` is a literal
// `${`. A `$` not followed by `{` is kept as is: tokens may contain `$`.
func expandEnv(s string, getenv func(string) string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in value (write $${ for a literal ${)")
		}
		expr := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validEnvName(name) {
			// The name is not quoted back: the value may be a secret.
			return "", fmt.Errorf("invalid environment variable name in ${...} (letters, digits and _ only)")
		}
		v := getenv(name)
		if v == "" {
			if !hasDef {
				return "", fmt.Errorf("environment variable %s is not set or empty (write ${%s:-default} to give a default)", name, name)
			}
			v = def
		}
		b.WriteString(v)
		i += 2 + end + 1
	}
	return b.String(), nil
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
