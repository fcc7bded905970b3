#!/bin/sh
# edge-agent package postremove. /var/lib/edge-agent (the WAL may still
# hold undelivered rows), /var/log/edge-agent and the edge-agent user are
# kept: delete them by hand once nothing is left to send.
set -e

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
exit 0
