package config

// Problems lists the problems inside an errors.Join tree, so each gets its
// own line. A *FieldError also unwraps to several errors (ErrInvalid and
// its cause) but is one problem, so the walk stops there.
func Problems(err error) []error {
	for e := err; e != nil; {
		if _, ok := e.(*FieldError); ok {
			return []error{e}
		}
		if m, ok := e.(interface{ Unwrap() []error }); ok {
			var out []error
			for _, inner := range m.Unwrap() {
				out = append(out, Problems(inner)...)
			}
			if len(out) > 0 {
				return out
			}
			break
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return []error{err}
}
