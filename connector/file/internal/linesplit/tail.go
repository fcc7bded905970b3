package linesplit

import (
	"bytes"
	"errors"
	"io"
)

// LastLineEnd returns the offset just past the last newline in the first
// size bytes of r, looking back at most limit bytes. It is where a file
// tailed "from its end" starts, so an unterminated last line is read in
// full once it is completed instead of being cut in half. When no newline
// is found it returns 0 if the whole file was searched, else size.
//
// buf is scratch space, read in chunks of its capacity (64 KiB when it
// has none): a first start tails every file, so a buffer allocated per
// call made discovering 100,000 files allocate gigabytes.
func LastLineEnd(r io.ReaderAt, size, limit int64, width int, bigEndian bool, buf []byte) (int64, error) {
	if size <= 0 {
		return 0, nil
	}
	if width != 2 {
		width = 1
	}
	if cap(buf) < 2 {
		buf = make([]byte, 64<<10)
	}
	buf = buf[:cap(buf)]
	chunk := int64(len(buf)) &^ 1 // whole UTF-16 units
	end := size &^ int64(width-1)
	floor := end - limit
	if floor < 0 {
		floor = 0
	}
	for end > floor {
		start := end - chunk
		if start < floor {
			start = floor
		}
		start &^= int64(width - 1)
		b := buf[:end-start]
		if _, err := r.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := lastNewline(b, width, bigEndian); i >= 0 {
			return start + int64(i+width), nil
		}
		end = start
	}
	if floor == 0 {
		return 0, nil
	}
	return size, nil
}

func lastNewline(b []byte, width int, bigEndian bool) int {
	if width == 1 {
		return bytes.LastIndexByte(b, '\n')
	}
	for j := len(b) - 2; j >= 0; j -= 2 {
		if bigEndian && b[j] == 0 && b[j+1] == '\n' || !bigEndian && b[j] == '\n' && b[j+1] == 0 {
			return j
		}
	}
	return -1
}
