#!/bin/sh
# edge-agent package preremove (deb: "remove" or "upgrade"; rpm: 0 on
# erase, 1 on upgrade). Only a real removal stops and disables the unit;
# an upgrade leaves it to postinstall.
set -e

case "$1" in
remove | 0)
	if command -v systemctl >/dev/null 2>&1; then
		if [ -d /run/systemd/system ]; then
			systemctl stop edge-agent.service || true
		fi
		systemctl disable edge-agent.service || true
	fi
	;;
esac
exit 0
