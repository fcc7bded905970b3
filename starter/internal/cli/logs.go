package cli

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/logging"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
)

// bootstrapFailed reports a failure that happened before the config named
// the log file: on stderr and in the default log file, where operators look
// for BOOTSTRAP_FAILED. In the foreground stderr gets a record like every
// other (tint on a terminal, JSON otherwise); a detached agent's stderr is
// edge-agent.out, which gets the plain error line the parent also prints.
func (a *agentCLI) bootstrapFailed(req startRequest, terminal bool, code int, err error) {
	if req.detached() {
		a.errorf("%s%v", msgFailed, err)
	} else {
		logging.Console(a.env.Stderr, terminal, slog.LevelInfo).Error(msgFailed+err.Error(), "exit_code", code)
	}
	s := logging.DefaultSettings()
	s.File = a.logFile(s.File, req.home)
	logger, closer, lerr := logging.New(logging.Options{Settings: s})
	if lerr != nil {
		return // stderr already has it
	}
	logger.Error(msgFailed+err.Error(), "exit_code", code)
	_ = closer.Close()
}

// openLog builds the agent logger from the log.* section: stderr (tint on a
// terminal, JSON otherwise) plus the file in the foreground, the file alone
// when detached.
// level is the LevelVar a reload sets log.level through.
func (a *agentCLI) openLog(cfg *config.Config, req startRequest, terminal bool, level *slog.LevelVar) (*slog.Logger, io.Closer, error) {
	s := cfg.Log
	if req.logLevel != "" {
		if err := s.Level.UnmarshalText([]byte(req.logLevel)); err != nil {
			return nil, nil, fmt.Errorf("--log-level: %w", err)
		}
	}
	s.File = a.logFile(s.File, req.home)
	o := logging.Options{Settings: s, LevelVar: level}
	if !req.detached() {
		o.Stderr, o.Terminal = a.env.Stderr, terminal
	}
	logger, closer, err := logging.New(o)
	if err != nil {
		return nil, nil, fmt.Errorf("log.file: %w", err)
	}
	return logger, closer, nil
}

// logFile is log.file resolved against the install root. When the config
// leaves it at its default, the Java agent's EDGE_AGENT_LOG_DIR and
// EDGE_AGENT_APP_LOG_NAME still choose the folder and the name.
func (a *agentCLI) logFile(name, home string) string {
	if name == "" || name == logging.DefaultFile {
		base := a.env.Getenv("EDGE_AGENT_APP_LOG_NAME")
		if base == "" {
			base = filepath.Base(logging.DefaultFile)
		}
		return filepath.Join(paths.LogDir(a.env.Getenv, home), base)
	}
	return paths.Resolve(home, name)
}
