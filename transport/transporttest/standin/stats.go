package standin

import "sync/atomic"

// Stats are cumulative counters since New.
type Stats struct {
	Connections     uint64 // TCP connections accepted
	Rejected        uint64 // connections answered REJECTED
	AuthFailures    uint64 // connections answered AUTH_FAILED
	Sessions        uint64 // connections authenticated (ACK)
	Batches         uint64 // __BATCH__ requests, well-formed or not
	Records         uint64 // records handed to the Handler
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
