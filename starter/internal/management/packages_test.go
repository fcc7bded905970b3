package management

import (
	"context"
	"crypto/ed25519"
	"sync"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/edge-agent/edge-agent/starter/internal/upgrade"
	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// fakePackages records the offers and reports what the test says.
type fakePackages struct {
	mu     sync.Mutex
	offers []upgrade.Offer
	known  *upgrade.Report
	c      *Client
}

func (f *fakePackages) Handle(_ context.Context, o upgrade.Offer) {
	f.mu.Lock()
	f.offers = append(f.offers, o)
	c := f.c
	f.mu.Unlock()
	c.ReportPackage(upgrade.Report{Offer: o, Phase: upgrade.InstallFailed, Error: "refused by the fake"})
}

func (f *fakePackages) Known() *upgrade.Report { return f.known }

// With Packages the agent announces both package capabilities, reports
// the last outcome at start, hands the top-level package to Packages
// and reports its status with the server's all-packages hash.
func TestPackages(t *testing.T) {
	fp := &fakePackages{known: &upgrade.Report{Offer: upgrade.Offer{Version: "1.2.3"}, Phase: upgrade.Installed}}
	f := newFixture(t, func(o *Options) { o.Packages = fp })
	f.start(t)
	fp.mu.Lock()
	fp.c = f.client
	fp.mu.Unlock()
	want := protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages | protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses
	f.wait(t, "registered with the last outcome", func(a opampdev.Agent) bool {
		st, has, _, _ := a.PackageStatus()
		return a.Capabilities&want == want && st == "Installed" && has == "1.2.3"
	})
	sig := make([]byte, ed25519.SignatureSize)
	if _, err := f.srv.OfferPackage(opampdev.Package{Version: "2.0.0", Content: []byte("bin"), Signature: sig}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "the offer's status", func(a opampdev.Agent) bool {
		st, _, offered, msg := a.PackageStatus()
		return st == "InstallFailed" && offered == "2.0.0" && msg == "refused by the fake" && len(a.Packages.GetServerProvidedAllPackagesHash()) == 32
	})
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if len(fp.offers) == 0 || fp.offers[0].Version != "2.0.0" || len(fp.offers[0].SHA256) != 32 || len(fp.offers[0].Signature) != 64 {
		t.Errorf("offers %+v", fp.offers)
	}
}

func TestNoPackageCapabilitiesWithoutPackages(t *testing.T) {
	f := newFixture(t, nil)
	f.start(t)
	a := f.wait(t, "registered", func(a opampdev.Agent) bool { return a.Capabilities != 0 })
	if a.Capabilities&(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages|protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses) != 0 {
		t.Errorf("capabilities %v announce packages", a.Capabilities)
	}
}

func TestPackageSettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    PackageSettings
		ok   bool
	}{
		{"off", PackageSettings{}, true},
		{"on", PackageSettings{PublicKey: "reBaRI9tsItElXURjSq6QdiylPeNHbKLyX+g/uZ7jME=", MaxSizeMB: 1, HealthDeadline: 1e9}, true},
		{"bad key", PackageSettings{PublicKey: "AAAA", MaxSizeMB: 1, HealthDeadline: 1e9}, false},
		{"zero size", PackageSettings{PublicKey: "reBaRI9tsItElXURjSq6QdiylPeNHbKLyX+g/uZ7jME=", HealthDeadline: 1e9}, false},
	} {
		s := DefaultSettings()
		s.OpAMP.Endpoint = "ws://127.0.0.1:1/v1/opamp"
		s.OpAMP.Packages = tc.p
		if err := s.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
