package daemon

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
func (b *boot) bootstrapFailed(code int, err error) {
	if b.o.Detached {
		b.o.PrintError(msgFailed + err.Error())
	} else {
		logging.Console(b.o.Stderr, b.terminal, slog.LevelInfo).Error(msgFailed+err.Error(), "exit_code", code)
	}
	s := logging.DefaultSettings()
	s.File = logFile(s.File, b.o.Home, b.o.Getenv)
	logger, closer, lerr := logging.New(logging.Options{Settings: s})
	if lerr != nil {
		return // stderr already has it
	}
	logger.Error(msgFailed+err.Error(), "exit_code", code)
	_ = closer.Close()
}

// openLog builds the agent's logger from the log.* section: stderr (tint on
// a terminal, JSON otherwise) plus the file in the foreground, the file
// alone when detached. level is the LevelVar a reload sets log.level
// through.
func (b *boot) openLog(cfg *config.Config, level *slog.LevelVar) (io.Closer, error) {
	s := cfg.Log
	if b.o.LogLevel != "" {
		if err := s.Level.UnmarshalText([]byte(b.o.LogLevel)); err != nil {
			return nil, fmt.Errorf("--log-level: %w", err)
		}
	}
	s.File = logFile(s.File, b.o.Home, b.o.Getenv)
	o := logging.Options{Settings: s, LevelVar: level, Ring: b.ring, Own: b.own.Handler}
	if !b.o.Detached {
		o.Stderr, o.Terminal = b.o.Stderr, b.terminal
	}
	logger, closer, err := logging.New(o)
	if err != nil {
		return nil, fmt.Errorf("log.file: %w", err)
	}
	b.logger = logger
	return closer, nil
}

// logFile is log.file resolved against the install root. When the config
// leaves it at its default, the Java agent's EDGE_AGENT_LOG_DIR and
// EDGE_AGENT_APP_LOG_NAME still choose the folder and the name.
func logFile(name, home string, getenv func(string) string) string {
	if name == "" || name == logging.DefaultFile {
		base := getenv("EDGE_AGENT_APP_LOG_NAME")
		if base == "" {
			base = filepath.Base(logging.DefaultFile)
		}
		return filepath.Join(paths.LogDir(getenv, home), base)
	}
	return paths.Resolve(home, name)
}
