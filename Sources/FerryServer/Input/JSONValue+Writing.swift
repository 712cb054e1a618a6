import FerryProtocol
/// Writing a ``JSONValue`` back as JSON text: keys sorted, numbers exactly
/// as they were read, so a document read, changed and written again says
/// the same about every value it did not change.
///
/// ```swift
/// let value = try StrictJSON.parse(Array(#"{"b": 1.50, "a": "é\n"}"#.utf8))
/// value.json(indent: nil)   // {"a":"é\n","b":1.50}
/// ```
extension JSONValue {
    /// The value as JSON text; with `indent`, one member or item per line.
    func json(indent: Int? = 2) -> String {
        var output = ""
        write(to: &output, indent: indent, depth: 0)
        return output
    }

    private func write(to output: inout String, indent: Int?, depth: Int) {
        func newline(_ depth: Int) {
            guard let indent else { return }
            output += "\n" + String(repeating: " ", count: indent * depth)
        }
        switch self {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .number(let text): output += text
        case .string(let text): JSONText.appendString(text, to: &output)
        case .array(let items):
            guard !items.isEmpty else { output += "[]"; return }
            output += "["
            for (index, item) in items.enumerated() {
                if index > 0 { output += "," }
                newline(depth + 1)
                item.write(to: &output, indent: indent, depth: depth + 1)
            }
            newline(depth)
            output += "]"
        case .object(let members):
            guard !members.isEmpty else { output += "{}"; return }
            output += "{"
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { output += "," }
                newline(depth + 1)
                JSONText.appendString(member.key, to: &output)
                output += indent == nil ? ":" : ": "
                member.value.write(to: &output, indent: indent, depth: depth + 1)
            }
            newline(depth)
            output += "}"
        }
    }
}
