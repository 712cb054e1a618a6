import FerryProtocol

/// A batch as a push sends it: its mutations, the settled conflicts that go
/// before them, and the highest mutation id handed out when it was taken.
struct TakenBatch: Sendable {
    var mutations: [PendingMutation]
    var settled: [PushRequest.SettledNotice]
    /// A reply saying the server applied more than this is of a server
    /// that applied ids this device never sent: the device's database was
    /// restored from an older copy. Ids handed out after it (a batch taken
    /// ahead, see ``PushAhead``) were not sent yet, so they do not count.
    var assignedUpTo: Int64
}

/// A push batch taken while the one before it was still on the wire
/// (``Outbox/takeBatch(limit:after:_:)``): in a long drain the device
/// freezes batch N+1 while the server applies batch N, instead of each side
/// waiting for the other.
///
/// It is sent once N's reply is in, and only by the push that follows that
/// reply with the same limit; any other step drops it. When N's reply is a
/// plain acknowledgement (``PushRecorder/keepsBatchAhead(_:assignedUpTo:)``),
/// it goes out before that reply is recorded (``sent``): the server applies
/// N+1 while the device settles N. Its ids still rise past N's, and N's
/// reply is recorded before N+1's.
///
/// Dropping loses nothing: its mutations are handed out in the outbox, and
/// the next batch taken sends them first, with the same ids (a dropped push
/// already sent is cancelled; a server that applied it answers those ids as
/// replays). A reply with conflicts or refusals, or from a server that
/// applied more than this copy sent, forgets those ids instead
/// (``PushRecorder``), and such a reply never lets the batch go out before
/// it is recorded: never sent, the edits are taken again as they stand
/// after the reply.
struct PushAhead: Sendable {
    /// The limit it was taken with: a push with another takes its own batch.
    let limit: Int
    let taken: TakenBatch
    /// Its push, encoded while the batch before it was on the wire, when it
    /// may go out before that batch's reply is recorded (it settles nothing).
    var prepared: PreparedPush?
    /// The push of this batch, when it went out before the reply of the one
    /// before it was recorded.
    var sent: SentPush?
}

/// A push on the wire: the answer, and when the request went out.
struct SentPush: Sendable {
    let answer: Task<PushResponse, any Error>
    let at: ContinuousClock.Instant

    /// The answer; cancelling the caller cancels the push.
    func reply() async throws -> PushResponse {
        try await withTaskCancellationHandler {
            try await answer.value
        } onCancel: {
            answer.cancel()
        }
    }
}
