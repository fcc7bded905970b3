package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/management"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/upgrade"
)

// UpgradeLayout is where self-upgrade keeps its versions: the id file's
// folder, writable under the systemd unit (the install root of a
// tarball, /var/lib/edge-agent of a package), never bin/.
func UpgradeLayout(getenv func(string) string, home string) upgrade.Layout {
	return upgrade.Layout{Dir: filepath.Dir(paths.IDFile(getenv, home))}
}

// confirmEvery is how often a version on trial checks its health.
const confirmEvery = 250 * time.Millisecond

// ConfirmHold is how long a version on trial must stay healthy, without
// a break, before it confirms itself: a quarter of its health deadline,
// at most ten seconds, so a version that is healthy for a moment and
// then fails is still rolled back.
func ConfirmHold(deadline time.Duration) time.Duration { return min(10*time.Second, deadline/4) }

// newUpgrader is the package installer, when management.opamp.packages
// is on and the agent can restart in place; report is late-bound to the
// client that hands it offers.
func newUpgrader(mo managementOptions, s management.PackageSettings, configPath string, report func(upgrade.Report)) *upgrade.Manager {
	if !s.Enabled() || mo.restart == nil {
		if s.Enabled() {
			mo.logger.Warn("management.opamp.packages is set, but this platform cannot restart in place: packages are not accepted")
		}
		return nil
	}
	pub, err := upgrade.ParsePublicKey(s.PublicKey)
	if err != nil {
		return nil // Validate reported it
	}
	exe, err := os.Executable()
	if err != nil {
		mo.logger.Warn("packages are not accepted: the binary's own path is unknown", "error", err.Error())
		return nil
	}
	m, err := upgrade.NewManager(upgrade.Options{
		Layout: UpgradeLayout(mo.getenv, mo.home), PublicKey: pub, MaxSize: int64(s.MaxSizeMB) << 20,
		HealthDeadline: s.HealthDeadline, Self: upgrade.Slot{Version: mo.version, Path: exe},
		Home: mo.home, ConfigPath: configPath, Report: report, Restart: mo.restart,
		Log: mo.logger.With("component", "upgrade"),
	})
	if err != nil {
		mo.logger.Warn("packages are not accepted", "error", err.Error())
		return nil
	}
	return m
}

// watchTrial confirms a version on trial (EDGE_AGENT_UPGRADE_TRIAL) once
// the agent reports healthy, then restarts it: the launcher that runs
// the trial then execs it for good. It returns at once otherwise.
func watchTrial(ctx context.Context, getenv func(string) string, home string, rt *agent.Agent, logger *slog.Logger, restart func()) {
	version := getenv(upgrade.EnvTrial)
	if version == "" || restart == nil {
		return
	}
	layout := UpgradeLayout(getenv, home)
	hold := ConfirmHold(upgrade.DefaultHealthDeadline)
	if st, err := layout.Load(); err == nil && st.Trial != nil {
		hold = ConfirmHold(time.Duration(st.Trial.Deadline))
	}
	go func() {
		t := time.NewTicker(confirmEvery)
		defer t.Stop()
		var since time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := time.Now()
			if !rt.Snapshot().Health(now, 0).Healthy {
				since = time.Time{}
				continue
			}
			if since.IsZero() {
				since = now
			}
			if now.Sub(since) < hold {
				continue
			}
			if err := layout.Confirm(version, time.Now()); err != nil {
				logger.Error("could not confirm the new version; the launcher rolls it back at its deadline", "error", err.Error())
				return
			}
			logger.Info("this version is healthy and confirmed; restarting to run it for good", "version", version)
			restart()
			return
		}
	}()
}

// VersionsStatus is the versions part of /debug/status and of `status`
// for an agent that does not report them itself.
func VersionsStatus(l upgrade.Layout, running string) *api.Versions {
	st := upgrade.ReadStatus(l, running)
	v := &api.Versions{Running: st.Running, Previous: st.Previous, Trial: st.Trial}
	if o := st.Last; o != nil {
		v.LastOffer = o.Version + " installed"
		if o.Failed {
			v.LastOffer = o.Version + " failed: " + o.Error
		}
	}
	return v
}
