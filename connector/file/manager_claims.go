package file

import (
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
func (in *Input) readElsewhere(path string) bool {
	owner := in.mg.claims.Owner(in.id, path)
	if owner == "" {
		return false
	}
	if _, logged := in.mg.claimLogged[path]; !logged {
		in.mg.claimLogged[path] = struct{}{}
		in.rep.log.Warn("file matched by an earlier input too; that input reads it and this one skips it",
			"path", path, "read_by", owner)
	}
	return true
}
