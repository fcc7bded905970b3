package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
)

// LoadOptions are Load's inputs besides the file path.
type LoadOptions struct {
	// Registry decodes the input section (required).
	Registry *input.Registry
	// Outputs decodes the output section (required).
	Outputs *output.Registry
	// Getenv expands ${VAR}; nil means os.Getenv.
	Getenv func(string) string
	// ReadFile reads agent.yaml and the secret files; nil means os.ReadFile.
	ReadFile func(string) ([]byte, error)
	// Home is the install root. Relative token-file, aes-secret-key-file
	// and TLS file paths are resolved against it here, because Load reads
	// the secret files; when empty they stay relative to the current
	// directory. queue.path and log.file are kept as written: their users
	// resolve them with paths.Resolve (the log file also honours
	// EDGE_AGENT_LOG_DIR when left at its default).
	Home string
	// StdinInput adds an input of type stdin (the agent reads its standard
	// input) to every config loaded: the config's only input when it
	// names none, an `inputs:` entry with id StdinInputID otherwise.
	StdinInput bool
}

// StdinInputID is the id of the input StdinInput adds to an `inputs:` list.
const StdinInputID = "stdin"

// stdinInputType is the type StdinInput adds.
const stdinInputType = "stdin"

func (o LoadOptions) withDefaults() LoadOptions {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.ReadFile == nil {
		o.ReadFile = os.ReadFile
	}
	return o
}

// Load reads agent.yaml at path, overlays it on NewDefaultConfig, reads
// the secret files it names and validates the result. On success it
// returns the Config and any warnings (deprecated keys, ignored values).
// On failure the error joins every problem found, each a *FieldError
// wrapping ErrInvalid; an error reading path itself does not wrap
// ErrInvalid (it wraps the fs error). Messages name the file as path was
// given.
func Load(path string, opts LoadOptions) (cfg *Config, warns []Warning, err error) {
	if opts.Registry == nil {
		return nil, nil, errors.New("load config: LoadOptions.Registry is nil")
	}
	if opts.Outputs == nil {
		return nil, nil, errors.New("load config: LoadOptions.Outputs is nil")
	}
	opts = opts.withDefaults()
	data, err := opts.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	cfg, warns, err = loadBytes(path, data, opts)
	if err != nil {
		return nil, warns, err
	}
	cfg.Path = abs
	return cfg, warns, nil
}

// loadBytes is Load of data, named name in messages.
func loadBytes(name string, data []byte, opts LoadOptions) (cfg *Config, warns []Warning, err error) {
	// The YAML library has panicked on malformed input in past releases;
	// a bad file must give an error, never take the agent down.
	defer func() {
		if r := recover(); r != nil {
			cfg, warns = nil, nil
			// Only the panic's type: its value may quote the file (a token).
			err = &FieldError{File: name, Err: fmt.Errorf("cannot parse the file as YAML (parser failure, %T)", r)}
		}
	}()
	cfg, warns, err = load(name, data, opts)
	if err != nil {
		return nil, warns, err
	}
	sum := sha256.Sum256(data)
	cfg.Hash = hex.EncodeToString(sum[:])
	cfg.source = data
	return cfg, warns, nil
}

func load(name string, data []byte, opts LoadOptions) (*Config, []Warning, error) {
	cfg := NewDefaultConfig()
	var probs problems
	d := &decoder{
		src:     newSourceMap(name),
		getenv:  opts.Getenv,
		probs:   &probs,
		aliases: deprecatedAliases(),
		secrets: secretKeys(),
		known:   knownKeys(opts.Registry, opts.Outputs),

		stdinInput: opts.StdinInput,
	}
	cfg.where = d.src

	root, err := parseRoot(name, data)
	if err != nil {
		return nil, nil, err
	}
	d.anchors = collectAnchors(root)
	d.decodeRoot(root, cfg, opts.Registry, opts.Outputs)
	if opts.StdinInput {
		d.addStdinInput(cfg, opts.Registry)
	}

	cfg.normalize()
	d.resolvePaths(cfg, opts.Home)
	d.readSecrets(cfg, opts.ReadFile)
	d.readQueueKey(cfg, opts.ReadFile)
	d.readHeaderFiles(cfg, opts.ReadFile)
	d.advise(cfg)

	cfg.validate(&probs)
	if err := probs.join(); err != nil {
		return nil, d.warns, err
	}
	return cfg, d.warns, nil
}

// parseRoot returns the body of the single document (nil when empty).
func parseRoot(name string, data []byte) (ast.Node, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		// Only the message and position: the library's formatted error
		// quotes source lines, which may hold a token.
		fe := &FieldError{File: name, Err: errors.New("invalid YAML")}
		var ye yaml.Error
		if errors.As(err, &ye) {
			fe.Err = fmt.Errorf("invalid YAML: %s", ye.GetMessage())
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				fe.Line, fe.Column = tk.Position.Line, tk.Position.Column
			}
		}
		return nil, fe
	}
	var root ast.Node
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if _, isComment := doc.Body.(*ast.CommentGroupNode); isComment {
			continue
		}
		if root != nil {
			line, col := position(doc.Body)
			return nil, &FieldError{File: name, Line: line, Column: col,
				Err: errors.New("the file holds more than one YAML document; agent.yaml must hold exactly one")}
		}
		root = doc.Body
	}
	return root, nil
}

// maxSchemaDepth is deeper than any real config (input.multiline.x is 3).
const maxSchemaDepth = 8

// inputSharedKeys are the input keys the registry decodes for every type.
var inputSharedKeys = []string{"input.type", "input.id", "input.processors"}

// knownKeys lists every valid canonical key: the sections', the input
// keys every type shares and those of every registered input and output
// type.
func knownKeys(reg *input.Registry, outs *output.Registry) []string {
	keys := append(schemaKeys(reflect.TypeOf(Config{}), "", maxSchemaDepth), inputSharedKeys...)
	for _, typ := range reg.Types() {
		if f, err := reg.Get(typ); err == nil {
			if c := f.NewDefaultConfig(); c != nil {
				keys = append(keys, schemaKeys(reflect.TypeOf(c), "input", maxSchemaDepth)...)
			}
		}
	}
	for _, typ := range outs.Types() {
		if f, err := outs.Get(typ); err == nil {
			if c := f.NewDefaultConfig(); c != nil {
				keys = append(keys, schemaKeys(reflect.TypeOf(c), "output", maxSchemaDepth)...)
			}
		}
	}
	return keys
}

// sectionNames are the only top-level keys (Java's five, plus inputs,
// log, http and management).
func sectionNames() []string {
	return []string{"agent", "input", "inputs", "queue", "retry", "output", "log", "http", "management"}
}

func (d *decoder) decodeRoot(root ast.Node, cfg *Config, reg *input.Registry, outs *output.Registry) {
	root = d.resolve(root, "")
	if root == nil {
		d.fail("input", errInputMissing())
		return
	}
	kvs, ok := entries(root)
	if !ok {
		line, col := position(root)
		d.probs.add(&FieldError{File: d.src.file, Line: line, Column: col,
			Err: fmt.Errorf("expected a mapping of sections (%s), got %s", strings.Join(sectionNames(), ", "), d.describe("", root))})
		return
	}
	v := reflect.ValueOf(cfg).Elem()
	fields := map[string][]int{}
	for _, f := range fieldsOf(v.Type()) {
		fields[f.name] = f.index
	}
	seenInput, seenInputs, seenOutput := false, false, false
	for _, kv := range kvs {
		name := keyName(kv.Key)
		if name == "" {
			d.badKey(kv, "", "")
			continue
		}
		d.mark(name, name, kv.Key)
		switch idx, known := fields[name]; {
		case name == "input":
			seenInput = true
			d.decodeInput(kv, reg, cfg)
		case name == "inputs":
			seenInputs = true
			d.decodeInputs(kv, reg, cfg)
		case name == "output":
			seenOutput = true
			d.decodeOutput(kv, outs, cfg)
		case known:
			d.decodeValue(kv.Value, v.FieldByIndex(idx), name, name)
		default:
			d.unknownKey(name, name, name, sectionNames(), "")
		}
	}
	switch {
	case seenInput && seenInputs:
		d.failf("inputs", "input and inputs are both set; keep one: input for one input (Java agent form), inputs for a list of inputs with their own ids")
	case !seenInput && !seenInputs && !d.stdinInput:
		d.fail("input", errInputMissing())
	}
	if !seenOutput {
		d.decodeOutput(nil, outs, cfg)
	}
}

// resolvePaths makes the file paths Load or the transport reads absolute
// under the install root, whatever the current directory.
func (d *decoder) resolvePaths(cfg *Config, home string) {
	if home == "" {
		return
	}
	if a, ok := cfg.Output.Options.(output.PathAnchor); ok {
		a.AnchorPaths(home)
	}
	cfg.Queue.Path = paths.Resolve(home, strings.TrimSpace(cfg.Queue.Path))
	if f := strings.TrimSpace(cfg.Queue.Encryption.KeyFile); f != "" {
		cfg.Queue.Encryption.KeyFile = paths.Resolve(home, f)
	}
	cfg.HTTP.TLS.AnchorPaths(func(p string) string { return paths.Resolve(home, p) })
	cfg.Management.AnchorPaths(func(p string) string { return paths.Resolve(home, p) })
	for _, e := range cfg.Inputs {
		if a, ok := e.Config.(input.PathAnchor); ok {
			a.AnchorPaths(home)
		}
		anchorSteps(e.Processors, home)
	}
	anchorSteps(cfg.Agent.Processors, home)
}

func (d *decoder) readSecret(key, path string, readFile func(string) ([]byte, error)) string {
	b, err := readFile(path)
	if err != nil {
		// The OS error names the path and the cause, never the content.
		d.failf(key, "cannot read: %w", err)
		return ""
	}
	return strings.TrimSpace(string(b))
}

// advise adds warnings for settings that work but are likely mistakes.
func (d *decoder) advise(cfg *Config) {
	if cfg.Agent.Delivery == agent.DeliveryNon {
		d.warn("agent.delivery-guarantee", "NON keeps no WAL: events are dropped when a send fails or the agent stops; queue.* and retry.* are ignored")
	}
	d.adviseOutput(cfg)
	d.adviseInputs(cfg)
}

// addStdinInput adds the input LoadOptions.StdinInput asks for: the
// config's only input when it has none, an entry of its inputs list, and
// an error when it has a single `input:` section (two inputs need a list,
// each with its id).
func (d *decoder) addStdinInput(cfg *Config, reg *input.Registry) {
	f, err := reg.Get(stdinInputType)
	if err != nil {
		d.fail("input", fmt.Errorf("reading standard input: %w", err))
		return
	}
	switch {
	case cfg.singleInput():
		d.fail("input", errors.New("reading standard input as well as the input section needs an inputs list: "+
			"write the input as an entry of inputs: (with an id) and add {id: in, type: stdin} there, or leave the input out"))
	case len(cfg.Inputs) > 0:
		cfg.Inputs = append(cfg.Inputs, InputEntry{ID: StdinInputID, Type: stdinInputType, Config: f.NewDefaultConfig()})
	case !d.src.has("inputs") && !d.src.has("input"):
		// The only input, as the single input: form: its id is settled
		// like that form's.
		cfg.Inputs = []InputEntry{{Key: "input", Type: stdinInputType, Config: f.NewDefaultConfig(), OptionalID: true}}
	default:
		d.fail("input", errors.New("reading standard input as well as the input section needs an inputs list: "+
			"write the input as an entry of inputs: (with an id) and add {id: in, type: stdin} there, or leave the input out"))
	}
}
