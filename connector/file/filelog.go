package file

import (
	"context"
	"log/slog"
)

// logFile logs one step of t's lifecycle with what an operator needs to
// follow a file through renames and truncations: the path, the identity
// (dev, inode) and an offset. These are rare events (never one per line
// read), so the attribute slice costs nothing that matters.
func (rp *report) logFile(level slog.Level, msg string, t *tracked, offset int64, extra ...any) {
	ctx := context.Background()
	if !rp.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]any, 0, 8+len(extra))
	attrs = append(attrs, "path", t.path, "dev", t.id.dev, "inode", t.id.ino, "offset", offset)
	rp.log.Log(ctx, level, msg, append(attrs, extra...)...)
}

// unreadBytes is how many bytes of a closed file were never read, as far
// as the last scan saw its size: lost if the file goes away now.
func unreadBytes(t *tracked) int64 {
	return max(0, t.lastSize-t.readPos)
}
