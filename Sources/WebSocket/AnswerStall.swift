/// Whether a client is taking a plain HTTP answer (`WebSocketTimeouts.stalledAnswer`):
/// progress is our socket taking bytes, or the client taking some of the
/// socket's queue (it went down since the last look). The socket asks for
/// more only once a third of its buffer is free, so what we write alone
/// would say that a slow but steady reader took nothing for many seconds.
struct AnswerStall {
    private var lastProgress: Double
    private var lastQueued = 0

    init(now: Double) { lastProgress = now }

    /// The socket took bytes of the answer.
    mutating func wrote(now: Double) { lastProgress = now }

    /// A look, `queued` bytes in the socket's queue (sent, not acknowledged)
    /// and `unsent` more waiting here: whether the client has taken nothing
    /// for `limit` seconds while some wait.
    mutating func stalled(queued: Int, unsent: Int, now: Double, limit: Double) -> Bool {
        if queued < lastQueued { lastProgress = now }
        lastQueued = queued
        return (unsent > 0 || queued > 0) && now - lastProgress >= limit
    }
}
