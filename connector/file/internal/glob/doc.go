// Package glob matches and expands the file input's path patterns.
//
// Matching is github.com/bmatcuk/doublestar/v4's: `*`, `?` and `[...]`
// inside one path segment, `**` as a whole segment for zero or more
// directories, `{a,b}` alternatives (nesting allowed) and `\` escapes,
// which covers the Java agent's NIO glob subset that matters for log
// files. This package adds the walk around it: where it starts (the
// pattern's literal prefix), which subtrees it skips (no segment could
// match), and its limits. Patterns are absolute after Compile (relative
// ones are resolved against the working directory). A pattern without any
// meta character that names a directory means every file below it, as if
// `/**` were appended.
//
// Walking never follows symbolic links to directories (no cycles); links
// to files are reported like files, and the caller stats them. It goes at
// most MaxDepth (64) directory levels below a pattern's base and reports
// where it stopped (ErrTooDeep); listing and stat go through FS.
package glob
