// Package multiline groups physical lines into logical events (stack
// traces, wrapped messages) for one file or one journal stream.
//
// Contract (matches the Java agent's MultilineAssembler except where noted):
//   - match "after": a line that matches (pattern XOR negate) starts a new
//     event; the buffered lines are released as one group and the line
//     becomes the new buffer. Other lines are appended.
//   - match "before": a line is appended; if it matches, the whole buffer,
//     including it, is released.
//   - max-lines: when the buffer already holds max-lines lines, the next
//     line first releases them, so long events are split, never unbounded.
//   - The idle clock is the time of the LAST line added (the Java agent
//     measures from the first line and so splits events still being
//     written); Flush releases whatever is buffered.
//
// Released groups wait in a ready queue until the caller takes them, so a
// caller that runs out of output budget loses nothing.
package multiline
