import FerryProtocol
import Foundation

/// A request body built straight from the value ``StrictJSON`` read and
/// ``RequestSchemas`` checked, instead of parsing the bytes a second time
/// with `JSONDecoder`: the push path's largest bodies, and the pull that
/// every device sends most often.
protocol StrictlyDecodable {
    /// - Precondition: `value` matched the type's schema.
    init(strict value: JSONValue) throws(FerryServerError)
}

extension PushRequest: StrictlyDecodable {
    init(strict value: JSONValue) throws(FerryServerError) {
        let object = try StrictField.object(value, "the body")
        var mutations: [Mutation] = []
        let items = try StrictField.array(object["mutations"], "mutations")
        mutations.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            mutations.append(try Mutation(strict: item, at: "mutations.\(index)"))
        }
        var seen: Seen?
        if let cursor = object["seen"] {
            let fields = try StrictField.object(cursor, "seen")
            seen = Seen(
                scope: try StrictField.string(fields["scope"], "seen.scope"),
                cursor: try StrictField.string(fields["cursor"], "seen.cursor"))
        }
        var settled: [SettledNotice]?
        if let items = object["settled"] {
            settled = try StrictField.array(items, "settled").enumerated().map { index, item throws(FerryServerError) in
                let fields = try StrictField.object(item, "settled.\(index)")
                return SettledNotice(
                    scope: try StrictField.string(fields["scope"], "settled.\(index).scope"),
                    id: try StrictField.string(fields["id"], "settled.\(index).id"))
            }
        }
        self.init(
            clientID: try StrictField.string(object["clientID"], "clientID"), mutations: mutations, seen: seen,
            settled: settled)
    }
}

extension PullRequest: StrictlyDecodable {
    init(strict value: JSONValue) throws(FerryServerError) {
        let object = try StrictField.object(value, "the body")
        let scopes = try StrictField.array(object["scopes"], "scopes").enumerated().map { index, item throws(FerryServerError) in
            let fields = try StrictField.object(item, "scopes.\(index)")
            return ScopeCursor(
                scope: try StrictField.string(fields["scope"], "scopes.\(index).scope"),
                cursor: try StrictField.optionalString(fields["cursor"], "scopes.\(index).cursor"),
                notices: try StrictField.optionalString(fields["notices"], "scopes.\(index).notices"),
                previous: try StrictField.optionalString(fields["previous"], "scopes.\(index).previous"))
        }
        let limit: Int? =
            switch object["limit"] {
            case nil, .null?: nil
            case let number?: Int(try StrictField.integer(number, "limit"))
            }
        self.init(clientID: try StrictField.string(object["clientID"], "clientID"), scopes: scopes, limit: limit)
    }
}

extension Mutation {
    /// `path` is built only for an error: building every field's path was a fifth of decoding a mutation.
    init(strict value: JSONValue, at path: @autoclosure () -> String) throws(FerryServerError) {
        let object = try StrictField.object(value, path())
        guard let operation = Operation(rawValue: try StrictField.string(object["operation"], "\(path()).operation")) else {
            throw FerryServerError.badRequest("`\(path()).operation` is not an operation")
        }
        let cells = try StrictField.object(object["columns"] ?? .object([:]), "\(path()).columns")
        var columns: [String: ColumnValue] = [:]
        columns.reserveCapacity(cells.count)
        for (name, cell) in cells {
            columns[name] = try ColumnValue(strict: cell, at: "\(path()).columns.\(name)")
        }
        let base: Int64? =
            switch object["baseVersion"] {
            case nil, .null?: nil
            case let number?: try StrictField.integer(number, "\(path()).baseVersion")
            }
        self.init(
            mutationID: try StrictField.integer(object["mutationID"], "\(path()).mutationID"),
            table: try StrictField.string(object["table"], "\(path()).table"),
            rowID: try StrictField.string(object["rowID"], "\(path()).rowID"),
            scope: try StrictField.string(object["scope"], "\(path()).scope"),
            operation: operation, columns: columns, baseVersion: base,
            hlc: HLCTimestamp(rawValue: try StrictField.integer(object["hlc"], "\(path()).hlc"))
        )
    }
}

extension ColumnValue {
    init(strict value: JSONValue, at path: @autoclosure () -> String) throws(FerryServerError) {
        switch value {
        case .null:
            self = .null
        case .string(let text):
            self = .text(text)
        case .number:
            self = .integer(try StrictField.integer(value, path()))
        case .object(let tagged) where tagged.count == 1:
            if case .string(let text)? = tagged["real"] {
                guard let real = Double(text), !real.isNaN else {
                    throw FerryServerError.badRequest("`\(path()).real`: \(String(reflecting: text)) is not a real number")
                }
                self = .real(real)
            } else if case .string(let base64)? = tagged["blob"], let data = Data(base64Encoded: base64) {
                self = .blob(data)
            } else {
                throw FerryServerError.badRequest("`\(path())`: blob is not valid base64")
            }
        default:
            throw FerryServerError.badRequest("`\(path())` is not a column value")
        }
    }
}

/// Reading one field of a checked value; a mismatch (which the schema
/// should have caught) is a 400, never a crash.
enum StrictField {
    static func object(_ value: JSONValue?, _ path: @autoclosure () -> String) throws(FerryServerError) -> JSONObject {
        guard case .object(let members)? = value else { throw .badRequest("`\(path())` should be an object") }
        return members
    }

    static func array(_ value: JSONValue?, _ path: @autoclosure () -> String) throws(FerryServerError) -> [JSONValue] {
        guard case .array(let elements)? = value else { throw .badRequest("`\(path())` should be an array") }
        return elements
    }

    static func string(_ value: JSONValue?, _ path: @autoclosure () -> String) throws(FerryServerError) -> String {
        guard case .string(let text)? = value else { throw .badRequest("`\(path())` should be a string") }
        return text
    }

    /// A string, or `nil` for a field that is absent or `null`.
    static func optionalString(_ value: JSONValue?, _ path: @autoclosure () -> String) throws(FerryServerError) -> String? {
        if value == nil || value == .null { return nil }
        return try string(value, path())
    }

    static func integer(_ value: JSONValue?, _ path: @autoclosure () -> String) throws(FerryServerError) -> Int64 {
        guard case .number(let text)? = value, StrictJSON.isIntegerLiteral(text), let integer = Int64(text) else {
            throw .badRequest("`\(path())` should be a 64-bit integer")
        }
        return integer
    }
}
