package component

// PathAnchor is implemented by configs that name files. The agent calls
// AnchorPaths with its install root, so relative paths mean the same thing
// whatever the working directory (systemd starts services in /).
type PathAnchor interface {
	AnchorPaths(base string)
}

// Adviser is implemented by configs that can tell a setting that works but
// is likely a mistake (a syslog listener other hosts reach without TLS).
// The agent prints each advice as a warning at config check and at start;
// E names the key it is about, relative to the part's section (the input
// kind's FieldError, or an error with a FieldKey method for outputs).
type Adviser[E any] interface {
	Advice() []E
}
