//go:build unix

package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// contractsDoc is the contributors' map of every package.
const contractsDoc = "../docs/dev/contracts.md"

// repoRoot is the repository's root, seen from this module.
const repoRoot = ".."

// TestContractsCoverEveryPackage: docs/dev/contracts.md has one entry per
// package of every module of go.work, and no entry for a folder that holds
// no package. It reads files only, so it runs under -short too.
func TestContractsCoverEveryPackage(t *testing.T) {
	pkgs := workspacePackages(t, repoRoot)
	entries := contractEntries(t, contractsDoc)

	for _, p := range pkgs {
		if !slices.Contains(entries, p) {
			t.Errorf("package %s has no entry in docs/dev/contracts.md (a line \"- `%s`: what it holds, what it must not do\")", p, p)
		}
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e] {
			t.Errorf("docs/dev/contracts.md has two entries for %s", e)
		}
		seen[e] = true
		if !slices.Contains(pkgs, e) {
			t.Errorf("docs/dev/contracts.md has an entry for %s, which is not a package of the workspace", e)
		}
	}
}

// TestContractsNameExistingPaths: every repository path docs/dev/contracts.md
// names in backquotes, in an entry or in its text, exists, so a package
// renamed or removed does not live on in the prose.
func TestContractsNameExistingPaths(t *testing.T) {
	modules := workspaceModules(t, repoRoot)
	b, err := os.ReadFile(contractsDoc)
	if err != nil {
		t.Fatal(err)
	}
	quoted := regexp.MustCompile("`([A-Za-z0-9_./-]+)`")
	n := 0
	for _, m := range quoted.FindAllStringSubmatch(string(b), -1) {
		p := m[1]
		first, _, _ := strings.Cut(p, "/")
		if !slices.Contains(modules, first) || strings.Contains(p, "..") {
			continue
		}
		n++
		if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p))); err != nil {
			t.Errorf("docs/dev/contracts.md names %s, which does not exist", p)
		}
	}
	if n < len(modules) {
		t.Fatalf("found only %d repository paths in %s", n, contractsDoc)
	}
}

// workspaceModules returns the module folders go.work uses, relative to
// root and slash-separated, without the "./".
func workspaceModules(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	var mods []string
	inUse := false
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case inUse && f[0] == ")":
			inUse = false
		case inUse:
			mods = append(mods, f[0])
		case f[0] == "use" && len(f) > 1 && f[1] == "(":
			inUse = true
		case f[0] == "use" && len(f) > 1:
			mods = append(mods, f[1])
		}
	}
	for i, m := range mods {
		mods[i] = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(m)), "./")
	}
	if len(mods) == 0 {
		t.Fatal("go.work uses no module")
	}
	return mods
}

// workspacePackages returns every package folder of every module of
// go.work, relative to root and slash-separated: the folders holding a .go
// file, as `go list ./...` run in each module finds them (testdata, vendor,
// folders starting with . or _ and nested modules left out), whatever the
// build constraints of the files.
func workspacePackages(t *testing.T, root string) []string {
	t.Helper()
	var pkgs []string
	for _, mod := range workspaceModules(t, root) {
		modDir := filepath.Join(root, filepath.FromSlash(mod))
		err := filepath.WalkDir(modDir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			name := d.Name()
			if path != modDir {
				if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			files, err := os.ReadDir(path)
			if err != nil {
				return err
			}
			for _, f := range files {
				if !f.IsDir() && strings.HasSuffix(f.Name(), ".go") {
					rel, err := filepath.Rel(root, path)
					if err != nil {
						return err
					}
					pkgs = append(pkgs, filepath.ToSlash(rel))
					break
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages under %s", len(pkgs), root)
	}
	slices.Sort(pkgs)
	return pkgs
}

// contractEntries returns the packages docs/dev/contracts.md has an entry
// for: the lines "- `folder`…".
func contractEntries(t *testing.T, doc string) []string {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile("^- `([^`]+)`")
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if m := entry.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d entries in %s", len(out), doc)
	}
	return out
}
