//go:build !linux

package syslog

import (
	"errors"
	"net"
)

// Outside Linux the kernel's drop count is not read: the counter stays 0.

func dropsOOBLen() int { return 0 }

var errNoDropCount = errors.New("syslog udp: the kernel's drop count is read on Linux only")

func enableDropCount(*net.UDPConn) error { return errNoDropCount }

func parseDropCount([]byte) (uint32, bool) { return 0, false }

func receiveBuffer(*net.UDPConn) (int, error) { return 0, errNoDropCount }
