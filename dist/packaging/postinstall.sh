#!/bin/sh
# edge-agent package postinstall (deb: "configure" [old-version]; rpm: count
# of installed versions). Safe to run again: every step checks first.
set -e

if ! getent passwd edge-agent >/dev/null 2>&1; then
	useradd --system --gid adm --home-dir /var/lib/edge-agent --no-create-home \
		--shell /usr/sbin/nologin --comment "edge-agent" edge-agent
fi

# The package installs these as root; the agent writes its WAL, id file and
# logs here, and adm members may read them.
chown edge-agent:adm /var/lib/edge-agent /var/log/edge-agent
chmod 0750 /var/lib/edge-agent
chmod 2750 /var/log/edge-agent

upgrade=no
case "$1" in
configure) [ -n "$2" ] && upgrade=yes ;;
[0-9]*) [ "$1" -ge 2 ] && upgrade=yes ;;
esac

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
if command -v systemctl >/dev/null 2>&1; then
	# Enabled, not started: the token must be in place first.
	systemctl enable edge-agent.service || true
	if [ "$upgrade" = yes ] && [ -d /run/systemd/system ]; then
		# A running agent is restarted on the new binary, which drains the
		# WAL the old one left; a stopped one stays stopped.
		systemctl try-restart edge-agent.service || true
	fi
fi
exit 0
