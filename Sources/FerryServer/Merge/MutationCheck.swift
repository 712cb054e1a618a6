import FerryProtocol

/// Structural checks on a push, made before any store is touched: names,
/// sizes and ordering (DESIGN.md server semantic 8).
struct MutationCheck: Sendable {
    var limits: ServerLimits
    var tables: ServerTables

    func check(_ request: PushRequest) throws(FerryServerError) {
        try Self.checkClientID(request.clientID)
        guard request.mutations.count <= limits.maxMutationsPerPush else {
            throw .badRequest(
                "a push carries at most \(limits.maxMutationsPerPush) mutations; this one has \(request.mutations.count): send them in batches"
            )
        }
        var previous: Int64 = 0
        for (index, mutation) in request.mutations.enumerated() {
            let place = "mutation \(index) (id \(mutation.mutationID))"
            guard mutation.mutationID > previous else {
                throw .badRequest("\(place): mutation ids must be positive and strictly increasing")
            }
            previous = mutation.mutationID
            guard Self.isIdentifier(mutation.table) else {
                throw .badRequest("\(place): table name \(Self.quoted(mutation.table)) is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 characters)")
            }
            guard tables.rule(for: mutation.table) != nil else {
                throw .badRequest("\(place): table `\(mutation.table)` is not synced by this server")
            }
            guard Self.isRowID(mutation.rowID) else {
                throw .badRequest("\(place): row id must be 1–128 printable ASCII characters")
            }
            guard ScopeName.isValid(mutation.scope) else {
                throw .badRequest("\(place): scope \(Self.quoted(mutation.scope)) is not a valid scope name")
            }
            if let base = mutation.baseVersion, base < 0 {
                throw .badRequest("\(place): baseVersion cannot be negative")
            }
            guard mutation.hlc.rawValue >= 0 else {
                throw .badRequest("\(place): hlc cannot be negative")
            }
            if mutation.operation == .delete, !mutation.columns.isEmpty {
                throw .badRequest("\(place): a delete carries no columns")
            }
            guard mutation.columns.count <= limits.maxColumnsPerMutation else {
                throw .badRequest("\(place): at most \(limits.maxColumnsPerMutation) columns per mutation")
            }
            for column in mutation.columns.keys where !Self.isIdentifier(column) {
                throw .badRequest("\(place): column name \(Self.quoted(column)) is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 characters)")
            }
        }
    }

    static func checkClientID(_ clientID: String) throws(FerryServerError) {
        guard (1...128).contains(clientID.utf8.count),
            clientID.utf8.allSatisfy({ isIdentifierByte($0) || $0 == UInt8(ascii: "-") })
        else {
            throw .badRequest("clientID must be 1–128 letters, digits, `_` or `-` (a UUID)")
        }
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, (1...64).contains(name.utf8.count) else { return false }
        return !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) && name.utf8.allSatisfy(isIdentifierByte)
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
    }

    static func isRowID(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count) && id.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// Quotes untrusted input for an error message, cut short.
    static func quoted(_ text: String) -> String {
        String(reflecting: text.count > 40 ? String(text.prefix(40)) + "…" : text)
    }
}
