package management

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	opamp "github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/starter/internal/upgrade"
)

// PackageSettings are management.opamp.packages.*: self-upgrade through
// OpAMP packages, off unless PublicKey is set. They come from the local
// file only, like the rest of management.
type PackageSettings struct {
	// PublicKey is the base64 ed25519 key offers must be signed with
	// (`edge-agent package keygen`).
	PublicKey string `yaml:"public-key"`
	// MaxSizeMB bounds a download.
	MaxSizeMB int `yaml:"max-size-mb"`
	// HealthDeadline is how long a new version has to report healthy
	// before it is rolled back.
	HealthDeadline time.Duration `yaml:"health-deadline-ms"`
}

// DefaultPackageSettings: off; once a key is set, 256 MiB and two minutes.
func DefaultPackageSettings() PackageSettings {
	return PackageSettings{MaxSizeMB: upgrade.DefaultMaxSizeMB, HealthDeadline: upgrade.DefaultHealthDeadline}
}

// Enabled reports whether packages are accepted.
func (p PackageSettings) Enabled() bool { return strings.TrimSpace(p.PublicKey) != "" }

// validate adds problems under opamp.packages.
func (p PackageSettings) validate(probs *check.Problems) {
	if !p.Enabled() {
		return
	}
	if _, err := upgrade.ParsePublicKey(p.PublicKey); err != nil {
		probs.Add("opamp.packages.public-key", "%v", err)
	}
	if p.MaxSizeMB <= 0 {
		probs.Add("opamp.packages.max-size-mb", "must be > 0, got %d", p.MaxSizeMB)
	}
	probs.PositiveMillis("opamp.packages.health-deadline-ms", p.HealthDeadline)
}

// Packages installs the packages the server offers; *upgrade.Manager is
// one.
type Packages interface {
	Handle(ctx context.Context, o upgrade.Offer)
	// Known is the last offer's fate at start (nil: none).
	Known() *upgrade.Report
}

// topLevel picks the agent's own package from an offer.
func topLevel(pa *protobufs.PackagesAvailable) (upgrade.Offer, error) {
	for name, p := range pa.GetPackages() {
		if p.GetType() != protobufs.PackageType_PackageType_TopLevel {
			continue
		}
		f := p.GetFile()
		o := upgrade.Offer{Name: name, Version: p.GetVersion(), URL: f.GetDownloadUrl(), SHA256: f.GetContentHash(),
			Signature: f.GetSignature(), Hash: p.GetHash(), AllHash: pa.GetAllPackagesHash(), Header: http.Header{}}
		for _, h := range f.GetHeaders().GetHeaders() {
			o.Header.Add(h.GetKey(), h.GetValue())
		}
		return o, nil
	}
	return upgrade.Offer{}, errors.New("the offer has no top-level package (PackageType_TopLevel)")
}

// handlePackages hands the offer to Packages, off the library's goroutine.
func (c *Client) handlePackages(pa *protobufs.PackagesAvailable) {
	if c.o.Packages == nil {
		return
	}
	o, err := topLevel(pa)
	if err != nil {
		c.log.Warn("package offer ignored", slog.String("error", err.Error()))
		return
	}
	c.pkgWG.Add(1)
	go func() {
		defer c.pkgWG.Done()
		c.o.Packages.Handle(c.ctx, o)
	}()
}

// ReportPackage reports an offer's status to the server (and keeps it
// for the next session).
func (c *Client) ReportPackage(r upgrade.Report) {
	st := packageStatuses(r, c.o.Describe().Version)
	c.mu.Lock()
	c.pkgStatus = st
	c.mu.Unlock()
	c.withClient(func(cl opamp.OpAMPClient) error { return cl.SetPackageStatuses(st) })
}

var phases = map[upgrade.Phase]protobufs.PackageStatusEnum{
	upgrade.Downloading:   protobufs.PackageStatusEnum_PackageStatusEnum_Downloading,
	upgrade.Installing:    protobufs.PackageStatusEnum_PackageStatusEnum_Installing,
	upgrade.Installed:     protobufs.PackageStatusEnum_PackageStatusEnum_Installed,
	upgrade.InstallFailed: protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed,
}

func packageStatuses(r upgrade.Report, running string) *protobufs.PackageStatuses {
	ps := &protobufs.PackageStatus{Name: r.Offer.Name, AgentHasVersion: running, ServerOfferedVersion: r.Offer.Version,
		ServerOfferedHash: r.Offer.Hash, Status: phases[r.Phase], ErrorMessage: r.Error}
	if r.Phase == upgrade.Installed && r.Offer.Version == running {
		ps.AgentHasHash = r.Offer.Hash
	}
	if r.Phase == upgrade.Downloading && r.Total > 0 {
		ps.DownloadDetails = &protobufs.PackageDownloadDetails{DownloadPercent: 100 * float64(r.Done) / float64(r.Total)}
	}
	all := r.Offer.AllHash
	if all == nil {
		all = []byte{}
	}
	return &protobufs.PackageStatuses{Packages: map[string]*protobufs.PackageStatus{r.Offer.Name: ps}, ServerProvidedAllPackagesHash: all}
}

// packageState is the library's PackagesStateProvider. The library needs
// one to announce AcceptsPackages; it only reads LastReportedStatuses,
// since the agent installs offers itself (Packages) rather than through
// the library's syncer, which has no signature check nor rollback.
type packageState struct{ c *Client }

var _ types.PackagesStateProvider = packageState{}

func (p packageState) AllPackagesHash() ([]byte, error) { return nil, nil }
func (p packageState) SetAllPackagesHash([]byte) error  { return nil }
func (p packageState) Packages() ([]string, error)      { return nil, nil }
func (p packageState) PackageState(string) (types.PackageState, error) {
	return types.PackageState{}, nil
}
func (p packageState) SetPackageState(string, types.PackageState) error { return nil }
func (p packageState) CreatePackage(string, protobufs.PackageType) error {
	return errors.New("packages are installed by the agent, not the library's syncer")
}
func (p packageState) FileContentHash(string) ([]byte, error) { return nil, nil }
func (p packageState) UpdateContent(context.Context, string, io.Reader, []byte, []byte) error {
	return errors.New("packages are installed by the agent, not the library's syncer")
}
func (p packageState) DeletePackage(string) error { return nil }
func (p packageState) LastReportedStatuses() (*protobufs.PackageStatuses, error) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.c.pkgStatus == nil {
		return &protobufs.PackageStatuses{ServerProvidedAllPackagesHash: []byte{}}, nil
	}
	return proto.Clone(p.c.pkgStatus).(*protobufs.PackageStatuses), nil
}
func (p packageState) SetLastReportedStatuses(*protobufs.PackageStatuses) error { return nil }

// initialPackageStatus is the report of the last offer's fate, from
// Packages.Known, for the first session.
func (c *Client) initialPackageStatus() {
	if c.o.Packages == nil {
		return
	}
	if r := c.o.Packages.Known(); r != nil {
		c.pkgStatus = packageStatuses(*r, c.o.Describe().Version)
	}
}
