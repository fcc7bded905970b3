package file

import (
	"fmt"
	"strings"
)

// lookupEncoding is replaced by the real golang.org/x/text lookup.
func lookupEncoding(name string) (string, error) {
	switch strings.ToUpper(strings.TrimSpace(name)) {
	case "", "UTF-8", "UTF8":
		return "UTF-8", nil
	}
	return "", fmt.Errorf("unsupported encoding %q", name)
}
