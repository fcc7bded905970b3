package wal

import (
	"fmt"
	"strings"
)

// Status is the state of one WAL row (see the package doc):
//
//	PENDING --Claim--> SENDING --Ack--> ACKED --CleanupAcked--> (deleted)
//	SENDING --Receive--> RECEIVED --Ack/AckReceivedThrough--> ACKED
//	RECEIVED --Unreceive--> PENDING
//	SENDING --Fail/Release/ResurrectSending--> PENDING
//	SENDING --Fail (attempts >= max)--> DEAD --RetryDead--> PENDING
//	PENDING --Claim finds a bad checksum--> DEAD
//
// The zero value is not a valid status, so a zeroed or garbage header byte
// is never mistaken for a sendable row.
type Status uint8

const (
	StatusPending Status = iota + 1
	StatusSending
	StatusAcked
	StatusDead
	// StatusReceived: the engine holds the row in memory but has not
	// committed it (CHECKPOINT delivery); it is kept until a commit covers
	// it and is never claimed on its own.
	StatusReceived
)

// Statuses lists the valid statuses in state-machine order.
var statuses = [...]Status{StatusPending, StatusSending, StatusReceived, StatusAcked, StatusDead}

// AllStatuses returns every valid status in state-machine order.
func AllStatuses() []Status { return append([]Status(nil), statuses[:]...) }

func (s Status) String() string {
	switch s {
	case StatusPending:
		return "PENDING"
	case StatusSending:
		return "SENDING"
	case StatusAcked:
		return "ACKED"
	case StatusDead:
		return "DEAD"
	case StatusReceived:
		return "RECEIVED"
	}
	return fmt.Sprintf("UNKNOWN(%d)", uint8(s))
}

// MarshalText writes the name, so JSON (the db API) carries "DEAD", not 4.
func (s Status) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("marshal status: %s", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a name written by MarshalText.
func (s *Status) UnmarshalText(b []byte) error {
	v, err := ParseStatus(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Valid reports whether s is one of the five statuses.
func (s Status) Valid() bool { return s >= StatusPending && s <= StatusReceived }

// ParseStatus accepts a status name in any case ("dead", "DEAD").
func ParseStatus(name string) (Status, error) {
	for _, s := range statuses {
		if strings.EqualFold(name, s.String()) {
			return s, nil
		}
	}
	return 0, fmt.Errorf("parse status %q: want one of PENDING, SENDING, RECEIVED, ACKED, DEAD", name)
}
