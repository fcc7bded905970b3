package cli

import "context"

// launch: self-upgrade needs a restart in place, which Windows has not.
func (a *agentCLI) launch(context.Context, startRequest) (bool, error) { return false, nil }
