package dist

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/CycloneDX/cyclonedx-gomod/pkg/generate/bin"
	"github.com/rs/zerolog"
)

// sbomSuffix names an artifact's SBOM: ARTIFACT.cdx.json.
const sbomSuffix = ".cdx.json"

// sbomGenerator is the module that reads the Go build information of each
// binary into a CycloneDX BOM; its version is recorded as the SBOM's tool.
const sbomGenerator = "github.com/CycloneDX/cyclonedx-gomod"

// binaryBOMs reads each binary's embedded build information (the modules
// linked in, with their go.sum hashes) with cyclonedx-gomod, in name
// order. The main modules get the release's version: the binaries are
// built without VCS stamps, which cyclonedx-gomod would derive one from.
// Package URLs are left without qualifiers: cyclonedx-gomod would fill
// goos/goarch from the go command's environment (this host), not from
// the binary; the binary's own GOOS/GOARCH are among its properties.
func binaryBOMs(bins map[string]string, version string) ([]*cdx.BOM, error) {
	var boms []*cdx.BOM
	for _, name := range slices.Sorted(maps.Keys(bins)) {
		g, err := bin.NewGenerator(bins[name], bin.WithLogger(zerolog.Nop()), bin.WithVersionOverride("v"+version), bin.WithShortPURLS(true))
		if err != nil {
			return nil, fmt.Errorf("dist: sbom of %s: %w", name, err)
		}
		bom, err := g.Generate()
		if err != nil {
			return nil, fmt.Errorf("dist: sbom of %s: %w", name, err)
		}
		boms = append(boms, bom)
	}
	return boms, nil
}

// artifactSBOM is one artifact's SBOM: the artifact (by name, version and
// SHA-256) as the subject, the binaries it ships as its components with
// the build properties cyclonedx-gomod read, and the union of their
// modules and dependency graphs. It carries no serial number and the
// release's epoch as its time, so two builds write the same bytes.
func artifactSBOM(name, version string, sha []byte, t Target, epoch time.Time, boms []*cdx.BOM) ([]byte, error) {
	subject := &cdx.Component{
		BOMRef:  "artifact:" + name,
		Type:    cdx.ComponentTypeFile,
		Name:    name,
		Version: version,
		Hashes:  &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sha)}},
		Properties: &[]cdx.Property{
			{Name: "edge-agent:target", Value: t.String()},
		},
	}
	var components []cdx.Component
	deps := map[string]map[string]bool{}
	var shipped []string
	addDeps := func(ref string, on ...string) {
		if deps[ref] == nil {
			deps[ref] = map[string]bool{}
		}
		for _, o := range on {
			deps[ref][o] = true
		}
	}
	seen := map[string]bool{}
	for _, b := range boms {
		main := *b.Metadata.Component
		main.Properties = b.Metadata.Properties
		if t.GOARCH == "arm" {
			props := append(slices.Clone(*main.Properties), cdx.Property{Name: "cdx:gomod:build:env:GOARM", Value: t.GOARM})
			main.Properties = &props
		}
		components = append(components, main)
		shipped = append(shipped, main.BOMRef)
		for _, c := range *b.Components {
			if !seen[c.BOMRef] {
				seen[c.BOMRef] = true
				components = append(components, c)
			}
		}
		for _, d := range *b.Dependencies {
			on := []string{}
			if d.Dependencies != nil {
				on = *d.Dependencies
			}
			addDeps(d.Ref, on...)
		}
	}
	addDeps(subject.BOMRef, shipped...)
	slices.SortFunc(components, func(a, b cdx.Component) int { return cmp.Compare(a.BOMRef, b.BOMRef) })
	var graph []cdx.Dependency
	for _, ref := range slices.Sorted(maps.Keys(deps)) {
		on := slices.Sorted(maps.Keys(deps[ref]))
		graph = append(graph, cdx.Dependency{Ref: ref, Dependencies: &on})
	}

	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{
		Timestamp: epoch.UTC().Format(time.RFC3339),
		Component: subject,
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "cyclonedx-gomod", Group: "github.com/CycloneDX", Version: moduleVersion(sbomGenerator),
		}}},
	}
	bom.Components = &components
	bom.Dependencies = &graph
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom); err != nil {
		return nil, fmt.Errorf("dist: sbom of %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// moduleVersion is the version of a module linked into this program.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "unknown"
}
