package processing

// RedactionView is the part of steps that shows an event as read without
// what its redaction hides (the input stage of `edge-agent tap`): every
// step up to the last redact, less those that decide whether an event
// goes on rather than what it holds (drop, keep, dedup, sample). Parse
// and field steps stay, so a redact that names parsed fields still finds
// them. Nil when steps redact nothing.
func RedactionView(steps []Step) []Step {
	last := -1
	for i := range steps {
		if steps[i].Redact != nil {
			last = i
		}
	}
	var out []Step
	for i := range last + 1 {
		switch steps[i].Kind() {
		case "drop", "keep", "dedup", "sample":
			continue
		}
		out = append(out, steps[i])
	}
	return out
}
