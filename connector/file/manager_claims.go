package file

import (
	"log/slog"
	"path/filepath"
	"strings"
)

// matches reports whether this input's paths cover path and its exclude
// does not: what a scan would pick up. Other inputs call it through
// input.Claims; it reads only what New set up.
func (mg *manager) matches(path string) bool {
	if mg.excluded(path) {
		return false
	}
	slashed := filepath.ToSlash(path)
	for _, p := range mg.pats {
		if p.Match(path) {
			return true
		}
		// A directory stands for every file below it.
		if p.Literal() && strings.HasPrefix(slashed, strings.TrimSuffix(p.String(), "/")+"/") {
			return true
		}
	}
	return false
}

// readElsewhere reports whether an input before this one in the agent's
// order matches path: that one reads it, this one skips it (logged once
// per path), so a file two inputs match is delivered once.
func (mg *manager) readElsewhere(self, path string, log *slog.Logger) bool {
	owner := mg.claims.Owner(self, path)
	if owner == "" {
		return false
	}
	if _, logged := mg.claimLogged[path]; !logged {
		mg.claimLogged[path] = struct{}{}
		log.Warn("file matched by an earlier input too; that input reads it and this one skips it",
			"path", path, "read_by", owner)
	}
	return true
}
