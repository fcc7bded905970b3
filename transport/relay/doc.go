// Package relay is the production server side of EdgeSocket: the listener
// of a relay agent (the edgesocket input), taking many collectors at once
// and answering each batch only once it is durable. The test stand-in
// for the engine is transport/transporttest/standin; the model of the
// engine is transport/enginemodel.
//
// Before authentication (hostile clients are expected here):
//
//   - the TLS handshake and the token line ("__AUTH__:<token>", or the
//     bare token, as the engine takes it) must arrive within AuthTimeout
//     of accept (1 s, the engine's accept_timeout_ms), far shorter than
//     the idle time allowed once authenticated;
//   - connections not yet authenticated share a budget (MaxHandshakes) and
//     a per-source-address share of it (MaxHandshakesPerSource). A new
//     connection is never refused for lack of room: it evicts an older
//     unauthenticated one, first of its own source when that source is at
//     its share, else of the source holding the most. A collector that
//     sends its token at once therefore gets in during a flood of silent
//     or half-sent connections;
//   - tokens have names (Config.Tokens); all are compared in constant
//     time; a wrong one is answered AUTH_FAILED. A source address whose
//     attempt failed waits AuthFailDelay before its next token is checked,
//     doubling per failure up to AuthFailDelayMax, while holding its place
//     in the budget: guessing from one address is slowed to its share of
//     the budget over that wait;
//   - failures are counted by reason (Stats.AuthFailures) and logged as
//     one aggregate WARN per AuthLogInterval, never with what was
//     presented.
//
// Once authenticated:
//
//   - up to MaxConnections collectors; one more gets REJECTED after its
//     token checked out;
//   - each connection is pipelined: up to MaxInFlight requests are read
//     ahead of their replies, and replies leave in request order; they
//     are written by whoever makes them ready (Ticket.Done, DoneAll, the
//     reader), without blocking, so a connection costs one goroutine; a
//     second one writes only while the collector's socket does not take
//     the replies at once, or under TLS;
//   - the Handler settles each batch's reply later through its Ticket, so
//     a relay answers RECEIVED only once the batch is durable; __COMMIT__
//     is then answered from the session's own durability (see
//     commitReply);
//   - ReadTimeout bounds a request line once begun (slow-loris),
//     IdleTimeout a silence while nothing is owed, WriteTimeout the
//     writing of replies (a collector that does not read them is closed:
//     its kernel send buffer is kept small on purpose);
//   - warnings a client can repeat at will (undecodable batches, lines
//     too long) are rate-limited, with the count of those held back.
package relay
