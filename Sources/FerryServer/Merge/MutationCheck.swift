import FerryProtocol

/// What a push must also be that its JSON Schema cannot say, checked before
/// any store is touched: mutation ids strictly increasing, and tables this
/// server syncs. Names, patterns, counts and the shape of a delete are the
/// schema's (the OpenAPI document, with the configured limits written in),
/// checked before this.
struct MutationCheck: Sendable {
    var tables: ServerTables

    func check(_ request: PushRequest) throws(FerryServerError) {
        var previous: Int64 = 0
        for (index, mutation) in request.mutations.enumerated() {
            let place = "mutation \(index) (id \(mutation.mutationID))"
            guard mutation.mutationID > previous else {
                throw .badRequest("\(place): mutation ids must be positive and strictly increasing")
            }
            previous = mutation.mutationID
            guard tables.rule(for: mutation.table) != nil else {
                throw .badRequest("\(place): table `\(mutation.table)` is not synced by this server")
            }
        }
    }

    /// Whether `name` is an identifier as the document's patterns state it
    /// (for path parameters, which no body schema checks).
    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, (1...64).contains(name.utf8.count) else { return false }
        return !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) && name.utf8.allSatisfy(isIdentifierByte)
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
    }

    /// Whether `id` is a row id as the document's pattern states it (for path parameters).
    static func isRowID(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count) && id.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// Quotes untrusted input for an error message, cut short.
    static func quoted(_ text: String) -> String {
        String(reflecting: text.count > 40 ? String(text.prefix(40)) + "…" : text)
    }
}
