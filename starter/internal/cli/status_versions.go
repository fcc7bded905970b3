package cli

import (
	"fmt"
	"io"

	"github.com/edge-agent/edge-agent/starter/internal/api"
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
