extension PushRequest {
    /// The request as JSON, written directly: `JSONEncoder` was a fifth of a
    /// long drain's client time. It decodes to the same request as
    /// `JSONEncoder().encode(self)` does (an absent `baseVersion`, `seen` or
    /// `settled` is left out, as the encoder leaves it out).
    ///
    /// ```swift
    /// let body = ByteBuffer(string: request.jsonText())
    /// ```
    package func jsonText() -> String {
        var out = "{\"clientID\":"
        out.reserveCapacity(64 + mutations.count * 160)
        JSONText.appendString(clientID, to: &out)
        out += ",\"mutations\":["
        for (index, mutation) in mutations.enumerated() {
            if index > 0 { out += "," }
            mutation.appendJSON(to: &out)
        }
        out += "]"
        if let seen {
            out += ",\"seen\":{\"scope\":"
            JSONText.appendString(seen.scope, to: &out)
            out += ",\"cursor\":"
            JSONText.appendString(seen.cursor, to: &out)
            out += "}"
        }
        if let settled {
            out += ",\"settled\":["
            for (index, notice) in settled.enumerated() {
                if index > 0 { out += "," }
                out += "{\"scope\":"
                JSONText.appendString(notice.scope, to: &out)
                out += ",\"id\":"
                JSONText.appendString(notice.id, to: &out)
                out += "}"
            }
            out += "]"
        }
        out += "}"
        return out
    }
}

extension Mutation {
    /// The mutation as a JSON object, as its `Codable` conformance writes it.
    package func appendJSON(to out: inout String) {
        out += "{\"mutationID\":\(mutationID),\"table\":"
        JSONText.appendString(table, to: &out)
        out += ",\"rowID\":"
        JSONText.appendString(rowID, to: &out)
        out += ",\"scope\":"
        JSONText.appendString(scope, to: &out)
        out += ",\"operation\":"
        JSONText.appendString(operation.rawValue, to: &out)
        out += ",\"columns\":"
        JSONText.appendObject(columns, to: &out)
        if let baseVersion { out += ",\"baseVersion\":\(baseVersion)" }
        out += ",\"hlc\":\(hlc.rawValue)}"
    }
}
