package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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
	return &Client{
		base:  "http://" + net.JoinHostPort(host, port),
		token: strings.TrimSpace(s.Token),
		hc:    &http.Client{Timeout: 5 * time.Second},
	}, nil
}

// Status fetches /debug/status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/debug/status", nil)
	if err != nil {
		return st, fmt.Errorf("status request: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return st, fmt.Errorf("ask the agent: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return st, fmt.Errorf("ask the agent: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("read the agent's status: %w", err)
	}
	return st, nil
}
