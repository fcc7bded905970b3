package output

import (
	"fmt"
	"io"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/console"
)

// TypeConsole writes each event as one line of JSON (NDJSON) to the
// writer given to NewConsoleFactory, stdout for the agent, instead of
// sending it: for trying things out or piping events into jq.
const TypeConsole = "console"

// ConsoleConfig accepts every key of the transport output, so switching
// output.type to console leaves a file that still loads (Java parity). It
// checks only their numbers, which are wrong even while unused, and ignores
// the endpoint, the token, the codec's names and the secret files.
type ConsoleConfig struct {
	Transport TransportConfig `yaml:",inline"`
}

// NewConsoleConfig holds the transport output's defaults.
func NewConsoleConfig() *ConsoleConfig {
	return &ConsoleConfig{Transport: *NewTransportConfig()}
}

// Validate checks the client's tuning only.
func (c *ConsoleConfig) Validate() error { return c.Transport.Client.ValidateTuning() }

// Pacing is the transport's, as it would be if output.type were switched
// back: the scheduler behaves the same whichever output is configured.
func (c *ConsoleConfig) Pacing() Pacing { return c.Transport.Pacing() }

// Redacted hides the transport keys' secrets, which a console config may
// still hold.
func (c *ConsoleConfig) Redacted() Config {
	return &ConsoleConfig{Transport: *c.Transport.Redacted().(*TransportConfig)}
}

// NewConsoleFactory returns the factory of the console output, writing to
// w. The command line passes its stdout; nil discards.
func NewConsoleFactory(w io.Writer) Factory { return consoleFactory{w: w} }

type consoleFactory struct{ w io.Writer }

func (consoleFactory) Type() string             { return TypeConsole }
func (consoleFactory) NewDefaultConfig() Config { return NewConsoleConfig() }

// Create returns a console sender and no encoder: people read RAW payloads.
func (f consoleFactory) Create(cfg Config, _ Settings) (transport.Sender, Encoder, error) {
	c, ok := cfg.(*ConsoleConfig)
	if !ok {
		return nil, nil, fmt.Errorf("console output: config is %T, want *output.ConsoleConfig", cfg)
	}
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	return console.New(f.w), nil, nil
}

// Destination: the console output writes to stdout (output.Destination).
func (*ConsoleConfig) Destination() string { return "stdout" }
