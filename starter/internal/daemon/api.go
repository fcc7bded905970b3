package daemon

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/dbview"
	"github.com/edge-agent/edge-agent/starter/internal/identity"
)

// apiStopTimeout bounds how long a stop waits for HTTP requests under way.
const apiStopTimeout = 5 * time.Second

// startAPI serves http.* (nothing when http.listen is off), writes a fresh
// token to tokenFile (mode 0600: only the agent's user reads it) before
// serving and the address it bound to addrFile after; the returned
// function removes both once it has stopped the server.
func startAPI(cfg *config.Config, rt *agent.Agent, logger *slog.Logger, build Build, mgmt func() *api.Management,
	bundle func(context.Context) ([]byte, error), addrFile, tokenFile string) (stop func(), err error) {
	if !cfg.HTTP.Enabled() {
		return func() {}, nil
	}
	// Without the file the API still refuses what needs a credential;
	// only http.token opens it then. Shipping does not depend on it.
	fileToken := api.NewFileToken()
	if err := identity.WriteAtomic(tokenFile, []byte(fileToken+"\n"), 0o600); err != nil {
		logger.Warn("cannot write the HTTP API's token file; status, top, db and diagnostics need http.token to read this agent", "file", tokenFile, "error", err)
		fileToken = ""
	}
	srv, err := api.Start(api.Options{
		Settings: cfg.HTTP, FileToken: fileToken, Source: rt, DB: rt, Logger: logger,
		Version: build.Version, Commit: build.Commit, ConfigHash: cfg.Hash,
		Management: mgmt, WALPath: cfg.Queue.Path, Diagnostics: bundle, Tap: rt.Tap,
		Reread: func(ctx context.Context, a dbview.RereadArgs) (dbview.RereadReport, error) {
			return rereadReport(ctx, rt, a)
		},
	})
	if err != nil {
		if fileToken != "" {
			_ = os.Remove(tokenFile)
		}
		return nil, err
	}
	// Without the file the CLI still reaches an API on a configured port;
	// only a free port (http.listen with port 0) depends on it.
	if err := identity.WriteAtomic(addrFile, []byte(srv.Addr()+"\n"), 0o644); err != nil {
		logger.Warn("cannot record the HTTP API's address; status, top and db cannot find an API on a free port", "file", addrFile, "error", err)
	}
	return func() {
		defer os.Remove(tokenFile)
		defer os.Remove(addrFile)
		ctx, cancel := context.WithTimeout(context.Background(), apiStopTimeout)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			logger.Warn("HTTP API did not stop cleanly", "error", err)
		}
	}, nil
}
