/// Which deadline a connection is under, as a pure state machine: the NIO
/// handlers feed it what they see and arm or cancel one timer as it says.
///
/// - Waiting for a request (after connecting, or after a response): the
///   idle timeout.
/// - From the first byte of a request to the end of its head: the header
///   read timeout.
/// - From the end of the head to the end of the body: the body read timeout.
/// - While the request is handled and its response written (a live stream
///   included): none; the handler owns that time.
///
/// ```swift
/// var deadline = ConnectionDeadline(limits: ConnectionLimits())
/// deadline.connected()        // .arm(.seconds(60), .idle)
/// deadline.bytesArrived()     // .arm(.seconds(10), .readingHead)
/// ```
struct ConnectionDeadline: Sendable {
    enum Phase: String, Sendable {
        case idle
        case readingHead
        case readingBody
        case handling
    }

    enum Action: Equatable, Sendable {
        /// Start a timer for `after`; when it fires, the connection closes
        /// for having stayed too long in `phase`.
        case arm(Duration, Phase)
        /// Cancel the timer.
        case disarm
        case none
    }

    let limits: ConnectionLimits
    private(set) var phase = Phase.idle
    /// Requests whose head arrived and whose response has not ended.
    private(set) var unanswered = 0

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    mutating func connected() -> Action {
        phase = .idle
        return .arm(limits.idleTimeout, .idle)
    }

    /// Raw bytes came in. Only the first byte of a request changes anything.
    mutating func bytesArrived() -> Action {
        guard phase == .idle else { return .none }
        phase = .readingHead
        return .arm(limits.headerReadTimeout, .readingHead)
    }

    mutating func headReceived() -> Action {
        unanswered += 1
        phase = .readingBody
        return .arm(limits.bodyReadTimeout, .readingBody)
    }

    /// The request's body ended. If it was answered already (a 401 before
    /// the body was read), the connection is idle now; otherwise the
    /// handler runs with no deadline.
    mutating func requestEnded() -> Action {
        guard unanswered > 0 else {
            phase = .idle
            return .arm(limits.idleTimeout, .idle)
        }
        phase = .handling
        return .disarm
    }

    /// A response ended. The connection is idle once every request is both
    /// read and answered; a body still arriving keeps its deadline, and a
    /// pipelined request still being handled keeps none.
    mutating func responseEnded() -> Action {
        unanswered = max(0, unanswered - 1)
        guard phase == .handling, unanswered == 0 else { return .none }
        phase = .idle
        return .arm(limits.idleTimeout, .idle)
    }
}
