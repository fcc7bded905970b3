package config

import (
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/output"
)

func TestWithOutputConnection(t *testing.T) {
	base, _, err := loadText(t, "input:\n  type: file\n  paths: [/var/log/*.log]\noutput:\n  type: transport\n  endpoint: 10.0.0.1:9000\n  token: old-token-0123456789\n")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		oc      OutputConnection
		want    func(*output.TransportConfig) bool
		errHave string
	}{
		{name: "endpoint and token", oc: OutputConnection{Endpoint: "10.0.0.2:9001", Token: "new-token-0123456789", ID: "ab12"},
			want: func(c *output.TransportConfig) bool {
				return c.Client.Endpoint == "10.0.0.2:9001" && c.Client.Token == "new-token-0123456789" && !c.TLS.Enabled
			}},
		{name: "token only keeps the endpoint", oc: OutputConnection{Token: "new-token-0123456789", ID: "cd34"},
			want: func(c *output.TransportConfig) bool { return c.Client.Endpoint == "10.0.0.1:9000" }},
		{name: "client certificate turns TLS on", oc: OutputConnection{CertFile: "/s/c.pem", KeyFile: "/s/k.pem", ID: "ef56"},
			want: func(c *output.TransportConfig) bool {
				return c.TLS.Enabled && c.TLS.CertFile == "/s/c.pem" && c.TLS.KeyFile == "/s/k.pem"
			}},
		{name: "bad endpoint", oc: OutputConnection{Endpoint: "no-port", ID: "x"}, errHave: "output.endpoint"},
		{name: "cert without key", oc: OutputConnection{CertFile: "/s/c.pem", ID: "x"}, errHave: "key-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := base.WithOutputConnection(tt.oc)
			if tt.errHave != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHave) {
					t.Fatalf("err %v, want one naming %s", err, tt.errHave)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(got.Output.Options.(*output.TransportConfig)) {
				t.Errorf("output %+v", got.Output.Options)
			}
			if got.Hash == base.Hash || got.OutputConnectionID() != tt.oc.ID {
				t.Errorf("hash %s (base %s), id %q", got.Hash, base.Hash, got.OutputConnectionID())
			}
			if base.Output.Options.(*output.TransportConfig).Client.Endpoint != "10.0.0.1:9000" {
				t.Error("the base config changed")
			}
			if y := string(got.EffectiveYAML()); !strings.Contains(y, "connection settings "+tt.oc.ID) || strings.Contains(y, tt.oc.Token+"\n") && tt.oc.Token != "" {
				t.Errorf("effective config:\n%s", y)
			}
		})
	}
}
