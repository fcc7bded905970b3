package dist

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/goreleaser/nfpm/v2/rpm"
)

// Where the .deb and .rpm put things (the operator guide and the packaged
// unit name the same paths).
const (
	pkgHome   = "/opt/edge-agent"
	pkgConfig = "/etc/edge-agent/agent.yaml"
	pkgData   = "/var/lib/edge-agent"
	pkgLog    = "/var/log/edge-agent"
	// The pid file sits with the agent's other state rather than under
	// /run: /run/edge-agent would exist only while systemd's
	// RuntimeDirectory= made it, so an agent started without systemd could
	// not write it, and the pid file's lock makes a stale one harmless.
	pkgPID = pkgData + "/edge-agent.pid"
	// pkgPaths is read by every edge-agent command (the agent's
	// paths.DefaultsFileName): the unit and a shell find the same files.
	pkgPaths = pkgHome + "/edge-agent.paths"
	pkgUnit  = "/usr/lib/systemd/system/edge-agent.service"
)

// packagedConfig rewrites the two relative paths of config/agent.yaml so
// the packaged agent keeps its WAL under /var/lib and its log under
// /var/log. Each line must be found exactly once: a reworded
// config/agent.yaml fails the release instead of shipping a package that
// writes under /opt.
func packagedConfig(src []byte) ([]byte, error) {
	for _, r := range []struct{ old, new string }{
		{"\n  path: data/wal.db\n", "\n  path: " + pkgData + "/wal.db\n"},
		{"\n  file: log/edge-agent.log\n", "\n  file: " + pkgLog + "/edge-agent.log\n"},
	} {
		if n := bytes.Count(src, []byte(r.old)); n != 1 {
			return nil, fmt.Errorf("dist: config/agent.yaml holds %q %d times, want once", r.old[1:len(r.old)-1], n)
		}
		src = bytes.Replace(src, []byte(r.old), []byte(r.new), 1)
	}
	return src, nil
}

// packagedPaths is the install root's path defaults, the variables the
// agent would otherwise need from its environment. The environment still
// wins over it.
func packagedPaths() []byte {
	return []byte("# Where the packaged edge-agent keeps its files; environment variables\n" +
		"# of the same names win over these.\n" +
		"EDGE_AGENT_CONFIG=" + pkgConfig + "\n" +
		"EDGE_AGENT_ID_FILE=" + pkgData + "/edge-agent.id\n" +
		"EDGE_AGENT_PID_FILE=" + pkgPID + "\n" +
		"EDGE_AGENT_LOG_DIR=" + pkgLog + "\n" +
		"EDGE_AGENT_LOG_FILE=" + pkgLog + "/edge-agent.out\n")
}

// writePackages builds the .deb and the .rpm of one linux target from the
// binaries already built for it, and returns their file names.
func writePackages(o Options, t Target, bins, docs map[string]string) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(o.Root, "config", "agent.yaml"))
	if err != nil {
		return nil, fmt.Errorf("dist: %w", err)
	}
	cfg, err := packagedConfig(raw)
	if err != nil {
		return nil, err
	}
	if cfg, err = targetConfig(t, cfg); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "edge-agent-pkg-")
	if err != nil {
		return nil, fmt.Errorf("dist: %w", err)
	}
	defer os.RemoveAll(work)
	cfgPath := filepath.Join(work, "agent.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o640); err != nil {
		return nil, fmt.Errorf("dist: %w", err)
	}
	pathsFile := filepath.Join(work, "edge-agent.paths")
	if err := os.WriteFile(pathsFile, packagedPaths(), 0o644); err != nil {
		return nil, fmt.Errorf("dist: %w", err)
	}

	var names []string
	for _, format := range []string{"deb", "rpm"} {
		info := packageInfo(o, t, bins, docs, cfgPath, pathsFile)
		var p nfpm.Packager = deb.Default
		if format == "rpm" {
			p = rpm.DefaultRPM
		}
		if err := nfpm.PrepareForPackager(nfpm.WithDefaults(info), format); err != nil {
			return nil, fmt.Errorf("dist: %s %s: %w", format, t, err)
		}
		var buf bytes.Buffer
		if err := p.Package(info, &buf); err != nil {
			return nil, fmt.Errorf("dist: %s %s: %w", format, t, err)
		}
		name := p.ConventionalFileName(info)
		if err := os.WriteFile(filepath.Join(o.OutDir, name), buf.Bytes(), 0o644); err != nil {
			return nil, fmt.Errorf("dist: write %s: %w", name, err)
		}
		names = append(names, name)
	}
	return names, nil
}

func packageInfo(o Options, t Target, bins, docs map[string]string, cfgPath, pathsFile string) *nfpm.Info {
	pkg := func(p string) string { return filepath.Join(o.Root, "dist", "packaging", p) }
	mtime := o.Epoch.UTC().Truncate(1e9)
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode, MTime: mtime}}
	}
	dir := func(dst string, mode os.FileMode) *files.Content {
		return &files.Content{Destination: dst, Type: files.TypeDir, FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode, MTime: mtime}}
	}
	link := func(target, dst string) *files.Content {
		return &files.Content{Source: target, Destination: dst, Type: files.TypeSymlink, FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: 0o777, MTime: mtime}}
	}

	contents := files.Contents{
		dir(pkgHome, 0o755),
		dir(pkgHome+"/bin", 0o755),
		file(filepath.Join(o.Root, operatorGuide), pkgHome+"/README.md", 0o644),
		file(filepath.Join(o.Root, "LICENSE"), pkgHome+"/LICENSE", 0o644),
		file(pathsFile, pkgPaths, 0o644),
		dir("/etc/edge-agent", 0o755),
		{Source: cfgPath, Destination: pkgConfig, Type: files.TypeConfigNoReplace,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "adm", Mode: 0o640, MTime: mtime}},
		dir(pkgData, 0o750),
		dir(pkgLog, 0o750),
		file(pkg("edge-agent.pkg.service"), pkgUnit, 0o644),
		// The tarball layout seen from /opt/edge-agent, so commands an
		// operator runs (status, db, check) find what the unit's agent uses.
		link("/etc/edge-agent", pkgHome+"/config"),
		link(pkgData, pkgHome+"/data"),
		link(pkgLog, pkgHome+"/log"),
		link(pkgData+"/edge-agent.id", pkgHome+"/edge-agent.id"),
		link(pkgData+"/edge-agent.instance-uid", pkgHome+"/edge-agent.instance-uid"),
		link(pkgPID, pkgHome+"/edge-agent.pid"),
		link(pkgHome+"/bin/edge-agent", "/usr/bin/edge-agent"),
	}
	names := make([]string, 0, len(bins))
	for n := range bins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		contents = append(contents, file(bins[n], pkgHome+"/bin/"+n, 0o755))
	}
	for _, d := range generatedDocs {
		contents = append(contents, file(docs[d.archive], d.pkg, 0o644))
	}
	contents = append(contents, dir(pkgHome+"/monitoring", 0o755))
	for _, dst := range slices.Sorted(maps.Keys(monitoringFiles)) {
		contents = append(contents, file(filepath.Join(o.Root, monitoringFiles[dst]), pkgHome+"/"+dst, 0o644))
	}

	info := &nfpm.Info{
		Name:        "edge-agent",
		Arch:        t.GOARCH,
		Platform:    "linux",
		Version:     o.Version,
		Release:     "1",
		Section:     "admin",
		Priority:    "optional",
		Maintainer:  "edge-agent maintainers",
		Description: "Tails local files into a durable WAL and delivers every line to Apache SeaTunnel over EdgeSocket.",
		Vendor:      "edge-agent",
		Homepage:    "https://github.com/edge-agent/edge-agent",
		License:     "MIT",
		MTime:       mtime,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Scripts: nfpm.Scripts{
				PostInstall: pkg("postinstall.sh"),
				PreRemove:   pkg("preremove.sh"),
				PostRemove:  pkg("postremove.sh"),
			},
			Deb: nfpm.Deb{Arch: debArch(t)},
			// The host name would otherwise be stamped into the rpm.
			RPM: nfpm.RPM{BuildHost: "edge-agent-dist", Arch: rpmArch(t)},
		},
	}
	return info
}
