// Package linesplit cuts raw file bytes into complete lines, chunk by
// chunk, so the reader never holds more than one line's worth of memory.
//
// Contract:
//   - Only lines terminated by a newline are returned; the bytes of an
//     unterminated last line are held (up to the line limit) until their
//     newline arrives, and are never returned as a line on their own.
//   - A line longer than the limit is cut to the limit and reported as
//     truncated when its newline arrives; the rest of it is skipped
//     without being stored, so memory stays bounded however long it is.
//   - Newlines are byte 0x0A for 8-bit and ASCII-compatible encodings
//     (UTF-8, ISO-8859-1, GBK: 0x0A never occurs inside a GBK character)
//     and the 2-byte code unit U+000A, aligned to even file offsets, for
//     UTF-16. A carriage return right before the newline is dropped.
//   - Every line is reported with the file offset just past its newline,
//     which is the resume position stored for it.
package linesplit
