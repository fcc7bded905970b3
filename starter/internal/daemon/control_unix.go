//go:build !windows

package daemon

import "log/slog"

// watchControl is where another system takes stop and reload requests
// that do not arrive as signals; here signals carry both.
func watchControl(*slog.Logger, func(), func()) (stop func()) { return func() {} }
