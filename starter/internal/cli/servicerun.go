package cli

import "context"

// serviceState is what a service reports to its manager while it runs.
type serviceState int

const (
	serviceStartPending serviceState = iota
	serviceRunning
	serviceStopPending
)

// superviseAgent is the body of a service: it runs the agent, reports it
// running once ready, and on a stop request (a stop or a system shutdown)
// cancels the agent's context, the same graceful stop as SIGTERM, then
// waits for it to finish. It returns the agent's own result. isStop picks
// the stop requests; every other request goes to other (the manager's
// interrogation). Kept apart from the Windows service API so that the
// sequence is tested everywhere.
func superviseAgent[R any](run func(ctx context.Context, ready func()) error, requests <-chan R, isStop func(R) bool, other func(R), report func(serviceState)) error {
	report(serviceStartPending)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	ready := make(chan struct{})
	readyCh := ready
	go func() { done <- run(ctx, func() { close(ready) }) }()
	for {
		select {
		case <-readyCh:
			readyCh = nil // a nil channel is never ready again
			if ctx.Err() == nil {
				report(serviceRunning)
			}
		case err := <-done:
			if ctx.Err() == nil {
				// Ended on its own (a failure): the manager learns it
				// is stopping before the exit code arrives.
				report(serviceStopPending)
			}
			return err
		case r := <-requests:
			if !isStop(r) {
				other(r)
				continue
			}
			if ctx.Err() == nil {
				report(serviceStopPending)
				cancel()
			}
		}
	}
}
