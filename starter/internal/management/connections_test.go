package management

import (
	"strings"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"
)

func TestEdgeSocketOffer(t *testing.T) {
	hdr := func(k, v string) *protobufs.Headers {
		return &protobufs.Headers{Headers: []*protobufs.Header{{Key: k, Value: v}}}
	}
	tests := []struct {
		name    string
		in      *protobufs.OtherConnectionSettings
		want    EdgeSocketOffer
		errHave string
	}{
		{name: "endpoint and token", in: &protobufs.OtherConnectionSettings{DestinationEndpoint: "edgesocket://10.0.0.2:9000", OtherSettings: map[string]string{"token": "t"}},
			want: EdgeSocketOffer{Endpoint: "10.0.0.2:9000", Token: "t"}},
		{name: "bearer header", in: &protobufs.OtherConnectionSettings{DestinationEndpoint: "tcp://h:1", Headers: hdr("authorization", "Bearer abc")},
			want: EdgeSocketOffer{Endpoint: "h:1", Token: "abc"}},
		{name: "certificate", in: &protobufs.OtherConnectionSettings{Certificate: &protobufs.TLSCertificate{Cert: []byte("C"), PrivateKey: []byte("K"), CaCert: []byte("A")}},
			want: EdgeSocketOffer{Cert: []byte("C"), Key: []byte("K"), CA: []byte("A")}},
		{name: "withdraw", in: &protobufs.OtherConnectionSettings{}, want: EdgeSocketOffer{}},
		{name: "basic auth", in: &protobufs.OtherConnectionSettings{Headers: hdr("Authorization", "Basic x")}, errHave: `must be "Bearer <token>"`},
		{name: "unknown setting", in: &protobufs.OtherConnectionSettings{OtherSettings: map[string]string{"compression": "LZ4"}}, errHave: `other_settings["compression"] is not known`},
		{name: "cert without key", in: &protobufs.OtherConnectionSettings{Certificate: &protobufs.TLSCertificate{Cert: []byte("C")}}, errHave: "needs both cert and private_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := edgeSocketOffer([]byte{9}, tt.in)
			if tt.errHave != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHave) {
					t.Fatalf("err %v, want %q", err, tt.errHave)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Endpoint != tt.want.Endpoint || got.Token != tt.want.Token || string(got.Cert) != string(tt.want.Cert) ||
				string(got.Key) != string(tt.want.Key) || string(got.CA) != string(tt.want.CA) || string(got.Hash) != "\x09" {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if got.Withdraw() != (tt.name == "withdraw") {
				t.Errorf("Withdraw() = %t", got.Withdraw())
			}
		})
	}
}

func FuzzParseTask(f *testing.F) {
	for _, seed := range []string{`{"id":"1","task":"backlog"}`, `{"id":"2","task":"diagnostics","args":{}}`, `{`, `{"task":""}`, `[]`, `null`} {
		f.Add("task", []byte(seed))
	}
	f.Add("other", []byte(`{"task":"x"}`))
	f.Fuzz(func(t *testing.T, typ string, data []byte) {
		req, err := parseTask(&protobufs.CustomMessage{Type: typ, Data: data})
		if err == nil && (typ != "task" || strings.TrimSpace(req.Task) == "") {
			t.Fatalf("accepted type %q data %q as %+v", typ, data, req)
		}
		if err != nil && err.Error() == "" {
			t.Fatal("an error without words")
		}
	})
}
