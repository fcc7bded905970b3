package agent

import "runtime/debug"

// groupMemoryFactor is how much of the soft memory limit each byte a slow
// disk's group holds past queue.group-max-bytes takes: the byte in the
// buffer, its part of the transaction's pages, the jobs out, which follow
// the group (loop.jobBytes: maxJobs jobs of a groupJobs-th each, two
// bytes per group byte), and the WAL's cache of decoded blocks, which
// follows it too (one).
const groupMemoryFactor = 4

// memoryLimit raises the process's soft memory limit while a slow disk's
// commit group holds more than queue.group-max-bytes, and sets it back
// once the group is back within it. That memory is what
// queue.slow-disk-group-max-bytes allows; under a limit that did not
// count it the collector would run almost without pause (a heap at its
// limit), taking the CPU the bigger group saves. Only a limit the agent
// set itself is moved (base): an operator's GOMEMLIMIT is left as it is.
// Not safe for concurrent use: the loop's.
type memoryLimit struct {
	// base is Options.MemoryLimit: the limit the process set, 0 when the
	// environment decided (then nothing is moved).
	base int64
	// now is the limit in force by this type's doing; base until raised.
	now int64
	// set applies a limit (debug.SetMemoryLimit; tests inject theirs).
	set func(int64) int64
}

func newMemoryLimit(base int64) memoryLimit {
	return memoryLimit{base: base, now: base, set: debug.SetMemoryLimit}
}

// follow sets the limit for a group whose byte bound is extra bytes past
// queue.group-max-bytes.
func (m *memoryLimit) follow(extra int) {
	if m.base <= 0 {
		return
	}
	want := m.base + groupMemoryFactor*int64(max(extra, 0))
	if want == m.now {
		return
	}
	m.set(want)
	m.now = want
}
