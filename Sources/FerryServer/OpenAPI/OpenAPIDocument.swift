import Foundation

/// The OpenAPI 3.1 description of every endpoint, committed as
/// `Sources/FerryServer/OpenAPI/openapi.json` and served at `/openapi.json`.
///
/// The committed file states the default ``ServerLimits``; a server with
/// other limits serves, and validates requests with, the document with its
/// own limits written in, so the limits live in one place: the
/// configuration.
///
/// ```swift
/// var limits = ServerLimits()
/// limits.maxMutationsPerPush = 5000
/// let document = try OpenAPIDocument.bundled(limits: limits)
/// // PushRequest.mutations has "maxItems": 5000
/// ```
public struct OpenAPIDocument: Sendable {
    /// The document's bytes.
    public let data: Data

    /// The committed document from the module's resources, with `limits`
    /// written in where it states a limit.
    public static func bundled(limits: ServerLimits = ServerLimits()) throws -> OpenAPIDocument {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json") else {
            throw FerryServerError(.internalError, "openapi.json is missing from the FerryServer resources")
        }
        let committed = try Data(contentsOf: url)
        var document = try StrictJSON.parse(Array(committed))
        var changed = false
        for placement in LimitPlacement.all {
            let value = JSONValue.number(String(placement.limit(limits)))
            guard try document.value(at: placement.path) != value else { continue }
            try document.set(value, at: placement.path)
            changed = true
        }
        return OpenAPIDocument(data: changed ? Data(document.json().utf8) : committed)
    }
}

/// Where the document states each configurable limit.
struct LimitPlacement: Sendable {
    /// Object keys, or `name=value` to pick the item of an array whose
    /// `name` is `value` (a parameter by its name).
    let path: [String]
    let limit: @Sendable (ServerLimits) -> Int64

    static let all: [LimitPlacement] = [
        LimitPlacement(path: ["components", "schemas", "PushRequest", "properties", "mutations", "maxItems"]) { Int64($0.maxMutationsPerPush) },
        LimitPlacement(path: ["components", "schemas", "Columns", "maxProperties"]) { Int64($0.maxColumnsPerMutation) },
        LimitPlacement(path: ["components", "schemas", "BackendWriteRequest", "properties", "writes", "maxItems"]) { Int64($0.maxMutationsPerPush) },
        LimitPlacement(path: ["components", "schemas", "PullRequest", "properties", "scopes", "maxItems"]) { Int64($0.maxScopesPerRequest) },
        LimitPlacement(path: ["components", "schemas", "PullRequest", "properties", "limit", "maximum"]) { Int64($0.maxPullLimit) },
        LimitPlacement(path: ["paths", "/v1/live", "get", "parameters", "name=scope", "schema", "maxItems"]) { Int64($0.maxScopesPerRequest) },
        LimitPlacement(path: ["paths", "/v1/blobs/{scope}/{sha256}", "put", "parameters", "name=Upload-Length", "schema", "maximum"]) { $0.maxBlobBytes },
        LimitPlacement(path: ["paths", "/v1/blobs/{scope}/{sha256}", "put", "parameters", "name=Upload-Offset", "schema", "maximum"]) { $0.maxBlobBytes },
    ]
}

extension JSONValue {
    /// The value at `path` (see ``LimitPlacement/path``).
    func value(at path: some Collection<String>) throws -> JSONValue {
        guard let key = path.first else { return self }
        return try child(key).value(at: path.dropFirst())
    }

    /// Replaces the value at `path`, which must exist.
    mutating func set(_ value: JSONValue, at path: some Collection<String>) throws {
        guard let key = path.first else { self = value; return }
        switch self {
        case .object(var members) where members[key] != nil:
            try members[key]!.set(value, at: path.dropFirst())
            self = .object(members)
        case .array(var items):
            guard let index = items.firstIndex(where: { $0.matches(key) }) else { throw Self.missing(key) }
            try items[index].set(value, at: path.dropFirst())
            self = .array(items)
        default:
            throw Self.missing(key)
        }
    }

    private func child(_ key: String) throws -> JSONValue {
        switch self {
        case .object(let members): if let member = members[key] { return member }
        case .array(let items): if let item = items.first(where: { $0.matches(key) }) { return item }
        default: break
        }
        throw Self.missing(key)
    }

    /// Whether this is an object whose member named before `=` in `selector` is the string after it.
    private func matches(_ selector: String) -> Bool {
        let parts = selector.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, case .object(let members) = self else { return false }
        return members[parts[0]] == .string(parts[1])
    }

    private static func missing(_ key: String) -> FerryServerError {
        FerryServerError(.internalError, "openapi.json has no `\(key)` where a limit is stated")
    }
}
