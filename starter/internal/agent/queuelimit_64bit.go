//go:build !(386 || arm || mips || mipsle)

package agent

const (
	// defaultQueueMaxBytes is queue.max-bytes when the config says nothing.
	defaultQueueMaxBytes = 1 << 30
	// queueMaxBytesLimit is the largest queue.max-bytes accepted; zero
	// means no limit (bbolt's map is not the bound on 64-bit platforms).
	queueMaxBytesLimit = 0
)
