package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// seqDigits is the width of the sequence number inside every line's msg
// (seq=NNNNNNNNN), so a sink can count each line once whatever shape the
// event arrives in.
const seqDigits = 9

// The secrets some lines carry: the chain must mask them before they leave.
const (
	secretEmail = "jane.doe@example.com"
	secretCard  = "4111 1111 1111 1111"
)

var levels = []string{"info", "info", "warn", "debug", "error", "info"}

// isDebug reports whether line seq is one the chain drops.
func isDebug(seq int) bool { return levels[seq%len(levels)] == "debug" }

// generate writes n JSON lines of about 200 bytes (newline included), as
// bench-processing does: one in six debug, one in ten with an e-mail
// address, one in twenty with a card number; each msg ends with
// seq=NNNNNNNNN. It returns the bytes written.
func generate(w io.Writer, n int) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	var total int64
	for i := range n {
		msg := fmt.Sprintf("request %d served in %d ms for session s-%06d upstream status 200 cache hit", i, i%997, i)
		switch {
		case i%20 == 0:
			msg += " paid with " + secretCard
		case i%10 == 0:
			msg += " user " + secretEmail
		}
		msg += fmt.Sprintf(" seq=%0*d", seqDigits, i)
		line := fmt.Sprintf(`{"ts":%d,"level":%q,"component":"http","msg":%q}`, 1764000000000+i, levels[i%len(levels)], msg)
		if pad := 199 - len(line) - len(`,"trace":""`); pad > 0 {
			line = line[:len(line)-1] + `,"trace":"` + strings.Repeat("t", pad) + `"}`
		}
		k, err := bw.WriteString(line + "\n")
		total += int64(k)
		if err != nil {
			return total, fmt.Errorf("write generated line %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return total, fmt.Errorf("write generated lines: %w", err)
	}
	return total, nil
}
