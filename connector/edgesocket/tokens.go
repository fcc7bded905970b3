package edgesocket

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/protocol"
	"github.com/edge-agent/edge-agent/transport/relay"
)

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

// tokens resolves tokens (inline, or token-file, which wins) and
// tokens-file into the relay's list. Errors name the key and, for the
// file, the line; never a token.
func (c *Config) tokens(read func(string) ([]byte, error)) ([]relay.Token, error) {
	var errs []error
	var out []relay.Token
	names := map[string]string{} // name → where it was given
	values := map[string]string{}
	add := func(where, name, value string) {
		switch {
		case name == "":
			errs = append(errs, input.Errorf(where, "the name is empty"))
			return
		case strings.IndexFunc(name, unicode.IsSpace) >= 0:
			errs = append(errs, input.Errorf(where, "name %q holds white space", name))
			return
		case names[name] != "":
			errs = append(errs, input.Errorf(where, "name %q is already given at %s", name, names[name]))
			return
		}
		if err := protocol.CheckToken(value); err != nil {
			errs = append(errs, input.Errorf(where, "token of %s: %v", name, err))
			return
		}
		if other := values[value]; other != "" {
			errs = append(errs, input.Errorf(where, "the token of %s is also the token of %s: give each name its own", name, other))
			return
		}
		names[name], values[value] = where, name
		out = append(out, relay.Token{Name: name, Value: value})
	}
	for i, t := range c.Tokens {
		key := fmt.Sprintf("tokens[%d]", i)
		value := t.Token
		if f := strings.TrimSpace(t.TokenFile); f != "" {
			b, err := read(f)
			if err != nil {
				errs = append(errs, input.Errorf(key+".token-file", "cannot read: %v", err))
				continue
			}
			value = strings.TrimSpace(string(b))
		}
		add(key, strings.TrimSpace(t.Name), value)
	}
	if f := strings.TrimSpace(c.TokensFile); f != "" {
		b, err := read(f)
		if err != nil {
			errs = append(errs, input.Errorf("tokens-file", "cannot read: %v", err))
		} else {
			pairs, perr := parseTokensFile(b)
			if perr != nil {
				errs = append(errs, input.Errorf("tokens-file", "%s: %v", f, perr))
			}
			for _, p := range pairs {
				add(fmt.Sprintf("tokens-file (%s line %d)", f, p.line), p.name, p.token)
			}
		}
	}
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, input.Errorf("tokens", "give at least one {name, token} in tokens or a tokens-file: collectors must authenticate"))
	}
	return out, errors.Join(errs...)
}

// tokenLine is one pair of a tokens file.
type tokenLine struct {
	line        int
	name, token string
}

// maxTokensFileBytes bounds the tokens file read.
const maxTokensFileBytes = 4 << 20

// parseTokensFile reads `name token` lines: blank lines and lines whose
// first non-blank character is # are skipped; name and token are
// separated by white space; the token is the rest of the line, trimmed.
// Errors name the line, never its content (it holds a token).
func parseTokensFile(b []byte) ([]tokenLine, error) {
	if len(b) > maxTokensFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxTokensFileBytes)
	}
	var out []tokenLine
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxTokensFileBytes)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.IndexFunc(line, unicode.IsSpace)
		if i < 0 {
			errs = append(errs, fmt.Errorf("line %d: want `name token`, found one word", n))
			continue
		}
		out = append(out, tokenLine{line: n, name: line[:i], token: strings.TrimSpace(line[i:])})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("line %d: %w", n+1, err))
	}
	return out, errors.Join(errs...)
}

// key returns the AES key PACKET mode decrypts with (nil: none, and in
// RAW mode always none). The file wins over the inline value.
func (c *Config) key(read func(string) ([]byte, error)) ([]byte, error) {
	if c.PacketMode != codec.ModePacket {
		return nil, nil
	}
	b64, keyName := c.AESSecretKeyBase64, "aes-secret-key-base64"
	if f := strings.TrimSpace(c.AESSecretKeyFile); f != "" {
		b, err := read(f)
		if err != nil {
			return nil, input.Errorf("aes-secret-key-file", "cannot read: %v", err)
		}
		b64, keyName = strings.TrimSpace(string(b)), "aes-secret-key-file"
	}
	if strings.TrimSpace(b64) == "" {
		return nil, nil
	}
	k, err := codec.DecodeKey(b64)
	if err != nil {
		return nil, input.Errorf(keyName, "%v", err)
	}
	return k, nil
}
