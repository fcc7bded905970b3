package protocol

// Command prefixes, as the engine's IngressCommand enum spells them.
const (
	PrefixAuth   = "__AUTH__:"
	PrefixBatch  = "__BATCH__:"
	PrefixCommit = "__COMMIT__:"
)

// Reply words, as the engine's EdgeSocketResponseCode enum spells them.
// QUEUE_FULL and ACK may carry a value after a ':' (see ParseReply).
const (
	ReplyACK           = "ACK"
	ReplyReceived      = "RECEIVED"
	ReplyRetry         = "RETRY"
	ReplyQueueFull     = "QUEUE_FULL"
	ReplyDecryptFailed = "DECRYPT_FAILED"
	ReplyDecodeFailed  = "DECODE_FAILED"
	ReplyAuthFailed    = "AUTH_FAILED"
	ReplyRejected      = "REJECTED"
	ReplyBadRequest    = "BAD_REQUEST"
	ReplyInvalidParam  = "INVALID_PARAM"
	ReplyPending       = "PENDING"
	ReplyResend        = "RESEND"
)

// QueueFullPrefix starts a "QUEUE_FULL:<ms>" reply.
const QueueFullPrefix = ReplyQueueFull + ":"

// Limits.
const (
	// DefaultQueueFullDelayMillis is the wait used when a QUEUE_FULL reply carries
	// no usable delay (missing, not a number, or <= 0), as the Java agent does.
	DefaultQueueFullDelayMillis = 500
	// MaxQueueFullDelayMillis caps the delay a QUEUE_FULL reply can ask for.
	// The Java agent has no cap; ours keeps a hostile or buggy value from
	// overflowing time.Duration or parking the sender for days.
	MaxQueueFullDelayMillis = 10 * 60 * 1000
	// MaxReplyBytes bounds a reply line read by a collector. Real replies
	// are a few bytes long.
	MaxReplyBytes = 4 << 10
	// DefaultMaxRequestBytes bounds a request line read by an ingress.
	DefaultMaxRequestBytes = 16 << 20
)
