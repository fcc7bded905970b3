//go:build 386 || arm || mips || mipsle

package agent

// On 32-bit platforms bbolt maps at most 2 GiB (1 GiB on mips) and the
// process has a few GiB of address space in all, while the WAL file never
// shrinks and holds more than the payload (keys, indexes, page slack). A
// payload cap of 512 MiB keeps the file within the 1 GiB map bbolt reaches
// by doubling, leaving the rest of the address space to the heap and to
// the remap's new mapping.
const (
	// defaultQueueMaxBytes is queue.max-bytes when the config says nothing.
	defaultQueueMaxBytes = 512 << 20
	// queueMaxBytesLimit is the largest queue.max-bytes accepted; 0
	// (unlimited) is refused too. Zero here means no limit.
	queueMaxBytesLimit = 512 << 20
)
