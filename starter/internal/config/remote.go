package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// RemoteName names a config sent by the OpAMP server in messages
// ("remote agent.yaml:12:3: output.token: ...").
const RemoteName = "remote agent.yaml"

// LoadRemote checks an agent.yaml sent by the OpAMP server with exactly
// Load's checks (so it fails where `config check` would), then takes the
// management section and queue.path from local: a remote config can
// neither cut the agent off from its server nor move its data. Relative
// paths and secret files resolve as for the local file.
func LoadRemote(local *Config, data []byte, opts LoadOptions) (*Config, []Warning, error) {
	if opts.Registry == nil || opts.Outputs == nil {
		return nil, nil, errors.New("load remote config: LoadOptions.Registry and Outputs are required")
	}
	opts = opts.withDefaults()
	cfg, warns, err := loadBytes(RemoteName, data, opts)
	if err != nil {
		return nil, warns, err
	}
	if _, set := cfg.where.places["management"]; set {
		warns = append(warns, cfg.where.warning("management", "ignored: the management section always comes from the local file"))
	}
	if cfg.Queue.Path != local.Queue.Path {
		warns = append(warns, cfg.where.warning("queue.path", "ignored: queue.path always comes from the local file ("+local.Queue.Path+")"))
	}
	if cfg.Queue.Encryption.KeyFile != local.Queue.Encryption.KeyFile {
		warns = append(warns, cfg.where.warning("queue.encryption", "ignored: queue.encryption always comes from the local file"))
	}
	cfg.Queue.Encryption = local.Queue.Encryption
	cfg.Management = local.Management
	cfg.Queue.Path = local.Queue.Path
	cfg.Path = local.Path
	cfg.remote = true
	return cfg, warns, nil
}

// RedactYAML returns an agent.yaml with the values of its secret keys
// (output.token, output.aes-secret-key-base64, http.token, every
// management.opamp.headers value, and every token and
// aes-secret-key-base64 under input or inputs) replaced by RedactedValue, comments and
// layout kept: the effective config the agent reports to its server.
func RedactYAML(data []byte) ([]byte, error) {
	f, err := parser.ParseBytes(data, parser.ParseComments)
	if err != nil {
		// Not quoted: the message may show a line holding a token.
		return nil, errors.New("redact: the config is not valid YAML")
	}
	secrets := secretKeys()
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			redactNode(doc.Body, "", secrets)
		}
	}
	return []byte(f.String() + "\n"), nil
}

func redactNode(n ast.Node, prefix string, secrets map[string]bool) {
	if seq, ok := n.(*ast.SequenceNode); ok {
		// inputs: and a relay's tokens: are lists of mappings.
		for _, el := range seq.Values {
			redactNode(el, prefix, secrets)
		}
		return
	}
	kvs, ok := entries(n)
	if !ok {
		return
	}
	for _, kv := range kvs {
		key := join(prefix, keyName(kv.Key))
		if (secrets[key] || isInputSecret(prefix, keyName(kv.Key))) && prefix != headersKey {
			if _, nested := entries(kv.Value); !nested {
				kv.Value = redacted(kv.Value)
				continue
			}
		}
		if prefix == headersKey {
			kv.Value = redacted(kv.Value)
			continue
		}
		redactNode(kv.Value, key, secrets)
	}
}

// isInputSecret: an input's secrets (a relay's tokens and its key) are
// redacted by name anywhere under input or inputs, at any depth, since
// input types define their own keys.
func isInputSecret(prefix, name string) bool {
	if prefix != "input" && prefix != "inputs" && !strings.HasPrefix(prefix, "input.") && !strings.HasPrefix(prefix, "inputs.") {
		return false
	}
	return name == "token" || name == "aes-secret-key-base64"
}

func redacted(n ast.Node) ast.Node {
	var pos *token.Position
	if tk := n.GetToken(); tk != nil {
		pos = tk.Position
	}
	return ast.String(token.New(RedactedValue, RedactedValue, pos))
}

// Remote reports whether c came from the OpAMP server (LoadRemote).
func (c *Config) Remote() bool { return c.remote }

// Origin is "remote" or "local", for logs and status.
func (c *Config) Origin() string {
	if c.remote {
		return "remote"
	}
	return "local"
}

// EffectiveYAML is what the agent reports as its config in force: the YAML
// c was loaded from, redacted, under a comment saying where it came from
// and what the local file overrides.
func (c *Config) EffectiveYAML() []byte {
	remote := c.remote
	body, err := RedactYAML(c.source)
	if err != nil {
		body = []byte("# (the source could not be shown: " + err.Error() + ")\n")
	}
	var b strings.Builder
	if remote {
		fmt.Fprintf(&b, "# in effect: the remote config (hash %s); management.* and queue.path (%s) come from the local file %s\n", c.Hash, c.Queue.Path, c.Path)
	} else {
		fmt.Fprintf(&b, "# in effect: the local file %s (hash %s)\n", c.Path, c.Hash)
	}
	if c.connection != "" {
		fmt.Fprintf(&b, "# output.endpoint, output.token and output.tls below are replaced by the OpAMP server's edgesocket connection settings %s\n", c.connection)
	}
	b.Write(body)
	return []byte(b.String())
}
