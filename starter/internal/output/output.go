// Package output declares what the agent's scheduler needs from an output
// and a registry of output types keyed by the `output.type` config value,
// as connector/input does for inputs, so new outputs plug in without
// touching the scheduler or the config layer. console and transport are
// the built-in types; the command line registers them.
package output

import (
	"errors"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/transport"
)

// Config is an output type's configuration, decoded from the `output`
// section of agent.yaml into the value returned by
// Factory.NewDefaultConfig. The keys every output shares, `type` and `id`,
// are the registry's: they never reach the config.
type Config interface {
	// Validate reports every problem at once (errors.Join), each naming
	// its key relative to the `output` section through a FieldKey method
	// (transport.FieldError).
	Validate() error
	// Pacing is what the scheduler must know of the sender it gets.
	Pacing() Pacing
	// Redacted returns a copy whose secrets read RedactedValue, safe to
	// log or show in status. The receiver is left as it is.
	Redacted() Config
}

// RedactedValue replaces a secret in a Redacted copy; an empty secret
// stays empty, so "not set" is still visible.
const RedactedValue = "<redacted>"

// Pacing is how the scheduler paces the sender it was given.
type Pacing struct {
	// MaxInFlight is the most batches one Send keeps awaiting replies
	// (the client's window grows up to it); the scheduler sizes its jobs
	// so the pipeline stays full.
	MaxInFlight int
	// InitialBackoff and MaxBackoff bound the pause after the destination
	// was unreachable when the agent keeps no WAL (retry.* is then
	// ignored); MaxBackoff is also the pause after REJECTED, AUTH_FAILED
	// and DECRYPT_FAILED.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// OnRefusal is what to do when the engine refuses the token or cannot
	// decrypt: RefusalExit stops the agent; anything else pauses sending
	// for MaxBackoff, as after REJECTED, and tries again.
	OnRefusal RefusalPolicy
}

// Settings is what every output gets beside its config.
type Settings struct {
	// ID is the output id: output.id, or the one the agent keeps in its
	// identity file. It is not sent on the wire.
	ID     string
	Logger *slog.Logger
	// Checkpoint: agent.delivery-guarantee is CHECKPOINT; the sender must
	// then be a transport.Committer opened for checkpoint delivery.
	Checkpoint bool
}

// Encoder turns a stored RAW payload into its wire form. codec.Encoder
// satisfies it.
type Encoder interface {
	Encode(dst, raw []byte) ([]byte, error)
}

// Factory creates outputs of one type.
type Factory interface {
	Type() string
	// NewDefaultConfig returns a pointer to a config struct holding every
	// default; agent.yaml is decoded on top of it.
	NewDefaultConfig() Config
	// Create builds the sender and the payload encoder. A nil Encoder
	// means payloads go out as stored (RAW). Nothing connects here: a
	// sender dials on its first Send, in the sender goroutine.
	Create(cfg Config, set Settings) (transport.Sender, Encoder, error)
}

// Secret is a secret setting that may be read from a file instead.
type Secret struct {
	Key     string  // e.g. "token"
	FileKey string  // e.g. "token-file"
	File    string  // the path written at FileKey; "" = use Value as is
	Value   *string // receives the file's content, trimmed
}

// SecretFiles is implemented by configs whose secrets may live in files.
// It lists only the secrets the configured mode uses: a stale path in an
// unused key must not stop the agent. The config layer reads each File
// and stores its content in Value, which wins over the inline value.
type SecretFiles interface {
	SecretFiles() []Secret
}

// Destination is implemented by configs that send somewhere: where, for
// the agent's description to a fleet manager (never a secret).
type Destination interface {
	Destination() string
}

// PathAnchor is implemented by configs that name files (see
// component.PathAnchor).
type PathAnchor = component.PathAnchor

// Checkpointer is implemented by configs whose sender can ask the engine
// which batches a completed checkpoint covers (agent.delivery-guarantee
// CHECKPOINT). CheckCheckpoint says why this config cannot, naming its
// key, or nil.
type Checkpointer interface {
	CheckCheckpoint() error
}

// Adviser is implemented by configs that can tell settings which work but
// are likely mistakes. Each advice names its key relative to the `output`
// section through a FieldKey method (transport.FieldError).
type Adviser = component.Adviser[error]

// ErrUnknownType is returned by Registry.Get for an unregistered type.
var ErrUnknownType = errors.New("unknown output type")

// Registry maps output.type values to factories. Build it in main; there
// is no package-level registry.
type Registry = component.Registry[Factory]

// NewRegistry returns a registry holding the given factories; Get wraps
// ErrUnknownType.
func NewRegistry(factories ...Factory) *Registry {
	return component.NewRegistry(ErrUnknownType, factories...)
}
