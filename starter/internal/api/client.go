package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client reads a running agent's API.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// NewClient talks to the server configured by s. An address bound on
// every interface is reached through loopback.
func NewClient(s Settings) (*Client, error) {
	if !s.Enabled() {
		return nil, fmt.Errorf("http.listen is %q: the agent serves no API", Off)
	}
	host, port, err := net.SplitHostPort(strings.TrimSpace(s.Listen))
	if err != nil {
		return nil, fmt.Errorf("http.listen %q: %w", s.Listen, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	scheme, hc := "http", &http.Client{}
	if s.TLS.Enabled() {
		tc, err := s.TLS.clientConfig()
		if err != nil {
			return nil, err
		}
		scheme = "https"
		hc.Transport = &http.Transport{TLSClientConfig: tc}
	}
	return &Client{
		base:  scheme + "://" + net.JoinHostPort(host, port),
		token: strings.TrimSpace(s.Token),
		// No overall timeout: verify walks the whole file, which takes
		// what it takes; Status bounds itself (statusTimeout).
		hc: hc,
	}, nil
}

// statusTimeout bounds Status: the status comes from memory, so an agent
// that does not answer in this time is not going to.
const statusTimeout = 5 * time.Second

// Status fetches /debug/status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var st Status
	err := c.do(ctx, http.MethodGet, "/debug/status", nil, &st)
	return st, err
}

// do sends one request and decodes the JSON answer into out. A failed
// /db/ request carries {"error": …}: that text is the error, so the
// operator reads the agent's words, not a status code.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, out any) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return fmt.Errorf("ask the agent: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("ask the agent: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var e apiError
		if json.Unmarshal(msg, &e) == nil && e.Error != "" {
			return &ResponseError{Code: resp.StatusCode, Msg: e.Error}
		}
		return &ResponseError{Code: resp.StatusCode, Msg: resp.Status + ": " + strings.TrimSpace(string(msg))}
	}
	if raw, ok := out.(*[]byte); ok {
		// A document that is not JSON (the diagnostics bundle), bounded.
		if *raw, err = io.ReadAll(io.LimitReader(resp.Body, maxRawAnswer)); err != nil {
			return fmt.Errorf("read the agent's answer to %s: %w", path, err)
		}
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read the agent's answer to %s: %w", path, err)
	}
	return nil
}

// stream sends a GET and returns the response for the caller to read
// (and close); an answer other than 200 is an error, as in do.
func (c *Client) stream(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("ask the agent: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask the agent: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var e apiError
		if json.Unmarshal(msg, &e) == nil && e.Error != "" {
			return nil, &ResponseError{Code: resp.StatusCode, Msg: e.Error}
		}
		return nil, &ResponseError{Code: resp.StatusCode, Msg: resp.Status + ": " + strings.TrimSpace(string(msg))}
	}
	return resp, nil
}

// ResponseError is an answer other than 200.
type ResponseError struct {
	Code int
	Msg  string
}

func (e *ResponseError) Error() string { return "the agent answered: " + e.Msg }
