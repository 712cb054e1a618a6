import FerryProtocol

/// A value another writer had pushed and the server had applied, discarded
/// by a later write or delete that had not seen it. Its writer is told with
/// a conflict notice (ARCHITECTURE.md server semantic 3).
struct OverriddenValue: Hashable, Sendable {
    /// Who wrote the discarded value (`user:client`, as cells record it).
    var writer: String
    /// The conflict from the writer's side: `local` is their lost value,
    /// `server` what stands now.
    var conflict: Conflict

    /// The user part of `writer` (client ids never hold a `:`).
    var userID: String {
        guard let colon = writer.lastIndex(of: ":") else { return writer }
        return String(writer[..<colon])
    }
}
