package cli

import (
	"fmt"
	"io"

	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/daemon"
)

// writeVersionsText shows the self-upgrade's versions, when it is on.
func writeVersionsText(out io.Writer, v *api.Versions) {
	if v == nil {
		return
	}
	prev := v.Previous
	if prev == "" {
		prev = "-"
	}
	fmt.Fprintf(out, "versions:\trunning %s, previous %s\n", v.Running, prev)
	if v.Trial != "" {
		fmt.Fprintf(out, "trial:\t%s (rolled back unless healthy in time)\n", v.Trial)
	}
	if v.LastOffer != "" {
		fmt.Fprintf(out, "last package offer:\t%s\n", oneLine(v.LastOffer))
	}
}

// fillVersions reads the self-upgrade's versions from disk when the
// running agent did not report them (no API, or stopped): status shows
// them whenever versions/state.json exists.
func (a *agentCLI) fillVersions(st *api.Status, home string) {
	if st.Management != nil && st.Management.Versions != nil {
		return
	}
	layout := daemon.UpgradeLayout(a.env.Getenv, home)
	s, err := layout.Load()
	if err != nil || (s.Current.Path == "" && s.Trial == nil && s.Last == nil) {
		return
	}
	running := st.Version
	if running == "" {
		running = s.Current.Version
	}
	if running == "" {
		running = a.env.Build.Version
	}
	if st.Management == nil {
		st.Management = &api.Management{}
	}
	st.Management.Versions = daemon.VersionsStatus(layout, running)
}
