package file

// fileSet decides what each file the input follows is, and keeps its
// state true as the file changes: a scan's listing reconciled with the
// tracked files (manager_scan.go, manager_discover.go,
// manager_stopped.go), renames and deletions, truncation and copytruncate
// (rotation_*.go), opening, eviction and retiring (reader_open.go,
// tracker.go). It holds no state of its own: it works on the Input's
// parts, which it is given at New, and on the tracker, through which
// alone a file is found.
type fileSet struct {
	*system
	*readOrder
	*rules
	cfg   *Config
	id    string // the input's, for claims
	mg    *manager
	files *files
	rd    *readers
	em    *emitter
	rep   *report
}
