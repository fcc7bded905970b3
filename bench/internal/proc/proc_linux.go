// Package proc reads what Linux's /proc says of a process the benchmarks
// started: its CPU time, resident memory and disk writes.
package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture (the kernel's ABI, whatever HZ is).
const clockTicks = 100

// Sample is what /proc says of a process at one moment.
type Sample struct {
	CPUSeconds float64 // utime + stime, every thread
	RSSBytes   int64   // VmRSS: resident set now
	HWMBytes   int64   // VmHWM: peak resident set
	WriteBytes int64   // write_bytes: bytes it caused to be written to disk; -1 when /proc/<pid>/io is not readable
}

// Read samples pid; an error means it is gone (or not readable).
func Read(pid int) (Sample, error) {
	var s Sample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name may hold spaces: fields count from its ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: no ')' in %q", pid, stat)
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64) // field 14, utime
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64) // field 15, stime
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	s.CPUSeconds = float64(ut+st) / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	s.RSSBytes = field(status, "VmRSS:") * 1024 // kB
	s.HWMBytes = field(status, "VmHWM:") * 1024
	s.WriteBytes = -1
	if io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		s.WriteBytes = field(io, "write_bytes:")
	}
	return s, nil
}

// field returns the number after name at the start of a line, or -1.
func field(text []byte, name string) int64 {
	for line := range bytes.Lines(text) {
		if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				if n, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
					return n
				}
			}
		}
	}
	return -1
}
