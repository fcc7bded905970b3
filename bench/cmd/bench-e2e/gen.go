package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
)

// seqDigits is the width of the sequence number every generated line
// carries, so the sink can count unique lines and duplicates.
const seqDigits = 9

var (
	levels     = []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	components = []string{"http", "db", "cache", "auth", "scheduler", "billing"}
	words      = []string{"request", "served", "user", "order", "latency", "retry", "timeout", "payload",
		"session", "opened", "closed", "cache", "miss", "hit", "queue", "flushed", "upstream", "status"}
)

// generate writes n log lines of 170 to 230 bytes (newline included), about
// 70 % plain "ts LEVEL [component] msg k=v" and 30 % JSON objects (all of
// them JSON with allJSON), each with a unique seq=NNNNNNNNN (plain) or
// "seq":"NNNNNNNNN" (JSON), deterministic for a seed. It returns the bytes
// written.
func generate(w io.Writer, n int, seed uint64, allJSON bool) (int64, error) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	bw := bufio.NewWriterSize(w, 1<<20)
	var total int64
	var line []byte
	const t0 = 1_764_000_000_000 // ms
	for i := range n {
		line = line[:0]
		target := 170 + rng.IntN(61) - 1 // without the newline
		ts := t0 + int64(i)*3
		lvl, comp := levels[rng.IntN(len(levels))], components[rng.IntN(len(components))]
		seq := fmt.Sprintf("%0*d", seqDigits, i)
		if rng.IntN(10) < 3 || allJSON {
			line = append(line, `{"ts":`...)
			line = strconv.AppendInt(line, ts, 10)
			line = append(line, `,"level":"`+lvl+`","component":"`+comp+`","seq":"`+seq+`","msg":"`...)
			line = fill(line, rng, target-2)
			line = append(line, `"}`...)
		} else {
			line = strconv.AppendInt(line, ts, 10)
			line = append(line, " "+lvl+" ["+comp+"] seq="+seq+" "...)
			line = fill(line, rng, target)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return total, fmt.Errorf("write generated line %d: %w", i, err)
		}
		total += int64(len(line))
	}
	if err := bw.Flush(); err != nil {
		return total, fmt.Errorf("write generated lines: %w", err)
	}
	return total, nil
}

// fill appends words and k=v pairs until line is exactly size bytes.
func fill(line []byte, rng *rand.Rand, size int) []byte {
	for len(line) < size {
		if rng.IntN(4) == 0 {
			line = append(line, "k"...)
			line = strconv.AppendInt(line, int64(rng.IntN(100)), 10)
			line = append(line, '=')
			line = strconv.AppendInt(line, int64(rng.IntN(100000)), 10)
		} else {
			line = append(line, words[rng.IntN(len(words))]...)
		}
		line = append(line, ' ')
	}
	return line[:size]
}
