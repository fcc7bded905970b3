package config

import (
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/logging"
	"github.com/edge-agent/edge-agent/starter/internal/management"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/processing"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// Config is agent.yaml after defaults, overlay, aliases and validation.
// Each section holds the typed options of the components that use it
// (durations as time.Duration, read from the Java agent's "-ms" keys);
// their defaults and checks are the components' own.
type Config struct {
	Agent  AgentConfig      `yaml:"agent"`
	Queue  QueueConfig      `yaml:"queue"`
	Retry  RetryConfig      `yaml:"retry"`
	Output OutputConfig     `yaml:"output"`
	Log    logging.Settings `yaml:"log"`
	HTTP   api.Settings     `yaml:"http"`
	// Management always comes from the local file, even when a remote
	// config is in force (see LoadRemote).
	Management management.Settings `yaml:"management"`

	// Path is the absolute path of the file this was loaded from.
	Path string `yaml:"-"`
	// Hash is a hex SHA-256 of the file's bytes (for status output).
	Hash string `yaml:"-"`

	// Inputs are the inputs in config order: the `inputs:` list, or the
	// single `input:` section as a one-entry list (the two are exclusive).
	// An id keys the input's saved positions.
	Inputs []InputEntry `yaml:"-"`

	// source is the YAML this was loaded from, for EffectiveYAML; remote
	// says it came from the OpAMP server (LoadRemote).
	source []byte
	remote bool
	// connection is the ID of the OpAMP connection settings put over
	// output.* (WithOutputConnection); "" when none.
	connection string

	// where locates keys in the file for Validate's messages; nil for a
	// Config built in code.
	where *sourceMap
}

// InputEntry is one input: an entry of `inputs:`, or the `input:` section.
type InputEntry struct {
	// Key is where agent.yaml sets it: "input", "inputs[2]".
	Key string
	// OptionalID says the id may be left out (the `input:` form): the
	// agent settles it with the identity file and the WAL.
	OptionalID bool
	// ID is the entry's id as written (unique; required in `inputs:`):
	// its WAL source id.
	ID string
	// Type is the entry's type, lower-cased ("file").
	Type string
	// Config is the decoded config of Type's factory.
	Config input.Config
	// Processors is the entry's own `processors:` list.
	Processors []processing.Step
	// QueueDrop is the entry's queue-drop, checked by the agent
	// (agent.CheckQueueDrop).
	QueueDrop string
}

// AgentConfig is the agent section: the agent's id and the scheduler's
// own settings, whose defaults and checks live in package agent.
type AgentConfig struct {
	ID             string `yaml:"id"`
	agent.Settings `yaml:",inline"`
	// Processors run on every input's events after the input's own.
	Processors []processing.Step `yaml:"processors"`
}

// QueueConfig is the queue section: the WAL's options (path, fsync;
// alias sqlite-path, deprecated) and the queue settings of the scheduler.
type QueueConfig struct {
	wal.Options         `yaml:",inline"`
	agent.QueueSettings `yaml:",inline"`
}

// RetryConfig is the retry section, the scheduler's.
type RetryConfig = agent.RetrySettings

// OutputConfig is the output section. output.type and output.id are the
// registry's; every other key is decoded into the type's own config.
type OutputConfig struct {
	// ID is output.id as written ("" = resolve it through the identity
	// file).
	ID string `yaml:"id"`
	// Type is output.type, lower-cased ("console", "transport").
	Type string `yaml:"type"`
	// Options is the decoded config of Type's factory (for "transport":
	// *output.TransportConfig). Nil in NewDefaultConfig: like the input's,
	// its defaults come from the factory once the type is known.
	Options output.Config `yaml:"-"`
	// RateLimit is output.rate-limit, the agent's send-rate cap: decoded
	// here, not by the type, since every output shares it.
	RateLimit output.RateLimit `yaml:"rate-limit"`
}

// AgentOptions hands each component its own options; the caller adds
// what the process provides (registries, install root, ids, logger).
func (c *Config) AgentOptions() agent.Options {
	return agent.Options{
		Agent:      c.Agent.Settings,
		Queue:      c.Queue.QueueSettings,
		Retry:      c.Retry,
		WAL:        c.Queue.Options,
		InputList:  c.inputSpecs(),
		OutputType: c.Output.Type,
		Output:     c.Output.Options,
		RateLimit:  c.Output.RateLimit,
	}
}

// inputSpecs are the inputs as the agent takes them.
func (c *Config) inputSpecs() []agent.InputSpec {
	out := make([]agent.InputSpec, len(c.Inputs))
	for i, e := range c.Inputs {
		out[i] = agent.InputSpec{ID: e.ID, Type: e.Type, Config: e.Config, Key: e.Key, OptionalID: e.OptionalID,
			QueueDrop: e.QueueDrop, Processors: withAgentSteps(e.Processors, c.Agent.Processors)}
	}
	return out
}

// PinnedInputID is the id agent.yaml sets for the input that may leave it
// out, which the identity file then holds ("" when none does).
func (c *Config) PinnedInputID() string {
	for _, e := range c.Inputs {
		if e.OptionalID {
			return e.ID
		}
	}
	return ""
}
