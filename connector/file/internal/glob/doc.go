// Package glob matches and expands the file input's path patterns.
//
// Syntax (the Java agent's NIO glob subset that matters for log files):
// `*`, `?` and `[...]` inside one path segment (path.Match), `**` as a
// whole segment for zero or more directories, and `{a,b}` alternatives,
// which are expanded before matching. Patterns are absolute after Compile
// (relative ones are resolved against the working directory). A pattern
// without any meta character that names a directory means every file
// below it, as if `/**` were appended.
//
// Walking never follows symbolic links to directories (no cycles); links
// to files are reported like files, and the caller stats them. It goes at
// most MaxDepth (64) directory levels below a pattern's base and reports
// where it stopped (ErrTooDeep); listing and stat go through FS.
package glob
