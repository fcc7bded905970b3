package config

import (
	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/logging"
	"github.com/edge-agent/edge-agent/starter/internal/management"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// NewDefaultConfig returns every default: the Java agent's and ours. Input stays nil: its defaults come from the input type's factory
// once input.type is known, so a default Config alone does not validate.
func NewDefaultConfig() *Config {
	return &Config{
		Agent: AgentConfig{Settings: agent.DefaultSettings()},
		Queue: QueueConfig{Options: wal.DefaultOptions(), QueueSettings: agent.DefaultQueueSettings()},
		Retry: agent.DefaultRetrySettings(),
		Output: OutputConfig{
			Type: defaultOutputType,
		},
		Log:        logging.DefaultSettings(),
		HTTP:       api.DefaultSettings(),
		Management: management.DefaultSettings(),
	}
}
