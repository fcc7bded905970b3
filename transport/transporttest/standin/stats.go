package standin

import (
	"strings"
	"sync/atomic"

	"github.com/edge-agent/edge-agent/transport/protocol"
)

// Stats are cumulative counters since New.
type Stats struct {
	Connections     uint64 // TCP connections accepted
	Rejected        uint64 // connections answered REJECTED
	AuthFailures    uint64 // connections answered AUTH_FAILED
	Sessions        uint64 // connections authenticated (ACK)
	Batches         uint64 // __BATCH__ requests, well-formed or not
	Records         uint64 // records the model accepted (RECEIVED), handed to the Handler
	DecodeFailures  uint64 // DECODE_FAILED replies
	DecryptFailures uint64 // DECRYPT_FAILED replies
	BadRequests     uint64 // BAD_REQUEST and INVALID_PARAM replies
	Cuts            uint64 // connections cut by Faults.CutAfter
}

type counters struct {
	connections, rejected, authFailures, sessions atomic.Uint64
	batches, records, decodeFailures              atomic.Uint64
	decryptFailures, badRequests, cuts            atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Connections:     c.connections.Load(),
		Rejected:        c.rejected.Load(),
		AuthFailures:    c.authFailures.Load(),
		Sessions:        c.sessions.Load(),
		Batches:         c.batches.Load(),
		Records:         c.records.Load(),
		DecodeFailures:  c.decodeFailures.Load(),
		DecryptFailures: c.decryptFailures.Load(),
		BadRequests:     c.badRequests.Load(),
		Cuts:            c.cuts.Load(),
	}
}

// count classifies one reply of the engine model.
func (c *counters) count(reply string) {
	switch {
	case reply == protocol.ReplyReceived:
		c.records.Add(1)
	case reply == protocol.ReplyDecodeFailed:
		c.decodeFailures.Add(1)
	case reply == protocol.ReplyDecryptFailed:
		c.decryptFailures.Add(1)
	case reply == protocol.ReplyBadRequest, strings.HasPrefix(reply, protocol.ReplyInvalidParam):
		c.badRequests.Add(1)
	}
}
