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
/// waiting for the other. It is sent only after N's reply is recorded, and
/// only by the push that follows that reply with the same limit; any other
/// step drops it. Dropping loses nothing: its mutations are handed out in the
/// outbox, and the next batch taken sends them first, with the same ids. A
/// reply with conflicts or refusals, or from a server that applied more than
/// this copy sent, forgets those ids instead (``PushRecorder``): never sent,
/// the edits are taken again as they stand after the reply.
struct PushAhead: Sendable {
    /// The limit it was taken with: a push with another takes its own batch.
    let limit: Int
    let taken: TakenBatch
}
