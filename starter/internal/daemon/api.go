package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/dbview"
)

// apiStopTimeout bounds how long a stop waits for HTTP requests under way.
const apiStopTimeout = 5 * time.Second

// startAPI serves http.* (nothing when http.listen is off); the returned
// function stops it.
func startAPI(cfg *config.Config, rt *agent.Agent, logger *slog.Logger, build Build, mgmt func() *api.Management,
	bundle func(context.Context) ([]byte, error)) (stop func(), err error) {
	if !cfg.HTTP.Enabled() {
		return func() {}, nil
	}
	srv, err := api.Start(api.Options{
		Settings: cfg.HTTP, Source: rt, DB: rt, Logger: logger,
		Version: build.Version, Commit: build.Commit, ConfigHash: cfg.Hash,
		Management: mgmt, WALPath: cfg.Queue.Path, Diagnostics: bundle,
		Reread: func(ctx context.Context, a dbview.RereadArgs) (dbview.RereadReport, error) {
			return rereadReport(ctx, rt, a)
		},
	})
	if err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), apiStopTimeout)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			logger.Warn("HTTP API did not stop cleanly", "error", err)
		}
	}, nil
}
