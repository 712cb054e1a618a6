import Foundation

/// Who may read and write which scope, as the test set it up: each user's
/// own `user:` scope, and shared scopes with an owner and members. The fuzz
/// never changes these (a member request names only scopes it does not own,
/// or scopes it made itself), so the model stays true while requests run at
/// once.
struct AccessModel: Sendable {
    static let users = ["alice", "bob", "carol"]
    /// Shared scope → owner, and member → may write.
    var owners: [String: String] = ["team:ab": "alice", "team:c": "carol"]
    var members: [String: [String: Bool]] = ["team:ab": ["bob": true]]

    /// The scopes that hold seeded secrets.
    var seededScopes: [String] { Self.users.map { "user:\($0)" } + owners.keys.sorted() }

    func canRead(_ user: String?, _ scope: String) -> Bool {
        guard let user else { return false }
        return scope == "user:\(user)" || owners[scope] == user || members[scope]?[user] != nil
    }

    func canWrite(_ user: String?, _ scope: String) -> Bool {
        guard let user else { return false }
        return scope == "user:\(user)" || owners[scope] == user || members[scope]?[user] == true
    }

    /// The text every seeded value and blob of `scope` carries: a response
    /// holding it carries that scope's data. Nothing the fuzz sends can
    /// contain it (`<` is in no generated name, and values are generated
    /// from lowercase letters and the document's examples).
    static func secret(_ scope: String) -> String { "SECRET<\(scope)>" }
}

/// A seeded row: where it is and what it holds.
struct SeededRow: Sendable, Hashable {
    var scope: String
    var rowID: String
    var title: String
}

/// Requests for every operation the OpenAPI document lists, with path,
/// query, header and body values drawn from its schemas and from what the
/// test seeded: other users' scopes, row ids and blob hashes, cursors seen in
/// other answers. A share of requests is broken on purpose: one value that
/// breaks its schema, bytes cut or flipped, the wrong content type, a token
/// that is missing, garbled, expired or signed with another key.
struct APIFuzzer {
    struct Operation {
        var method: String
        var path: String
        var parameters: [[String: Any]]
        var bodySchema: String?
        var bodyType: String?
    }

    /// One generated request and what the test needs to judge its answer.
    struct Generated {
        var request: RawHTTP.Request
        /// The user whose valid token it carries; `nil` for none.
        var requester: String?
        /// The document's operation it was drawn from (`GET /v1/pull`).
        var operation: String
        var label: String
        /// The body breaks its schema in one place: it must be refused.
        var broken: Bool
        /// For a member request: the scope it changes.
        var memberScope: String?
        var isLive: Bool
    }

    struct Tokens: Sendable {
        var valid: [String: String]
        var expired: [String: String]
        var foreign: [String: String]
    }

    var generator: SchemaGenerator
    let operations: [Operation]
    let model: AccessModel
    let rows: [SeededRow]
    let blobs: [(scope: String, sha256: String)]
    let tokens: Tokens
    var cursors: CursorCollector

    init(
        document: Data, seed: UInt64, model: AccessModel, rows: [SeededRow], blobs: [(scope: String, sha256: String)],
        tokens: Tokens, cursors: [String]
    ) throws {
        let root = try JSONSerialization.jsonObject(with: document) as? [String: Any] ?? [:]
        let schemas = (root["components"] as? [String: Any])?["schemas"] as? [String: Any] ?? [:]
        generator = SchemaGenerator(schemas: schemas, seed: seed)
        var operations: [Operation] = []
        for (path, item) in (root["paths"] as? [String: [String: Any]] ?? [:]).sorted(by: { $0.key < $1.key }) {
            let shared = item["parameters"] as? [[String: Any]] ?? []
            for (method, value) in item.sorted(by: { $0.key < $1.key }) {
                guard let operation = value as? [String: Any], method != "parameters" else { continue }
                let content = (operation["requestBody"] as? [String: Any])?["content"] as? [String: Any]
                let type = content?.keys.first
                let reference = ((content?[type ?? ""] as? [String: Any])?["schema"] as? [String: Any])?["$ref"] as? String
                operations.append(
                    Operation(
                        method: method.uppercased(), path: path,
                        parameters: shared + (operation["parameters"] as? [[String: Any]] ?? []),
                        bodySchema: reference.map { String($0.split(separator: "/").last!) },
                        bodyType: type))
            }
        }
        self.operations = operations
        self.model = model
        self.rows = rows
        self.blobs = blobs
        self.tokens = tokens
        self.cursors = CursorCollector(seen: cursors)
    }

    private mutating func pick<T>(_ values: [T]) -> T { values[generator.next(values.count)] }
    private mutating func chance(_ percent: Int) -> Bool { generator.chance(percent) }

    static let junk = [
        "", "..", "../../etc/passwd", "a/b", "é", "%", "%00", "\u{1}", "a b", "user:", "@", String(repeating: "z", count: 300),
        "SELECT *", "'; DROP TABLE rows; --", "{}", "null", "-1", "0x10", "🙂",
    ]

    mutating func scope(for user: String) -> String {
        switch generator.next(10) {
        case 0..<3: return pick(model.seededScopes.filter { model.canRead(user, $0) })
        case 3..<6: return pick(model.seededScopes)
        case 6: return "list\(generator.next(50))@\(pick(AccessModel.users))"
        case 7: return "team:\(generator.next(5))"
        case 8: return "user:\(user)"
        default: return pick(Self.junk)
        }
    }

    /// A row id: mostly one seeded in a scope `user` cannot write (so the
    /// seeded rows are never an authorised write's target), else random.
    mutating func rowID(for user: String) -> String {
        let foreign = rows.filter { !model.canWrite(user, $0.scope) }
        if chance(60), !foreign.isEmpty { return pick(foreign).rowID }
        return chance(80) ? "row-\(generator.next(1000))" : pick(Self.junk)
    }

    mutating func pathValue(_ name: String, schema: [String: Any], for user: String) -> String {
        switch name {
        case "scope": return scope(for: user)
        case "rowID":
            let readable = rows.filter { model.canRead(user, $0.scope) }
            return chance(30) ? pick(readable).rowID : chance(40) ? pick(rows).rowID : rowID(for: user)
        case "table": return chance(80) ? "note" : pick(["item", "missing", "rows", "sqlite_master"] + Self.junk)
        case "sha256":
            if chance(60), !blobs.isEmpty { return pick(blobs).sha256 }
            return chance(70) ? String((0..<64).map { _ in pick(Array("0123456789abcdef")) }) : pick(Self.junk)
        case "user": return chance(85) ? pick(AccessModel.users + ["dave"]) : pick(Self.junk)
        default:
            if let pattern = schema["pattern"] as? String, chance(80) { return generator.string(matching: pattern) }
            return pick(Self.junk)
        }
    }

    static func encode(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._~:@+!$&'()*,;=")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    mutating func headerValue(_ name: String) -> String {
        switch name {
        case "Range":
            return pick([
                "bytes=0-10", "bytes=5-", "bytes=-3", "bytes=0-0", "bytes=10-5", "bytes=0-99999999999", "pages=1-2",
                "bytes=\(generator.next(100))-\(generator.next(200))", "bytes=", "bytes=0-1,3-4",
            ])
        default:
            return chance(80) ? "\(generator.next(3) == 0 ? 0 : generator.next(70))" : pick(["-1", "abc", "1.5", "99999999999999999999", ""])
        }
    }

    mutating func token(for user: String) -> (header: String?, requester: String?) {
        switch generator.next(20) {
        case 0: return (nil, nil)
        case 1: return ("Bearer not.a.token", nil)
        case 2: return ("Bearer \(tokens.expired[user]!)", nil)
        case 3: return ("Bearer \(tokens.foreign[user]!)", nil)
        case 4: return ("Basic \(Data("\(user):pw".utf8).base64EncodedString())", nil)
        default: return ("Bearer \(tokens.valid[user]!)", user)
        }
    }

    /// A random request from `user`'s side.
    mutating func next(as user: String) -> Generated {
        let operation = pick(operations)
        var method = operation.method
        var label = "\(operation.method) \(operation.path)"
        var path = operation.path
        var query: [String] = []
        var headers: [(String, String)] = []
        var memberScope: String?
        for parameter in operation.parameters {
            let name = parameter["name"] as? String ?? ""
            let schema = parameter["schema"] as? [String: Any] ?? [:]
            switch parameter["in"] as? String {
            case "path":
                let value = pathValue(name, schema: schema, for: user)
                if name == "scope", operation.path.contains("members"), model.owners[value] == user {
                    // Never change the seeded scopes' members: the model must stay true.
                    memberScope = "list\(generator.next(50))@\(user)"
                    path = path.replacingOccurrences(of: "{scope}", with: Self.encode(memberScope!))
                    continue
                }
                if name == "scope", operation.path.contains("members") { memberScope = value }
                path = path.replacingOccurrences(of: "{\(name)}", with: chance(97) ? Self.encode(value) : value.replacingOccurrences(of: " ", with: "+"))
            case "query":
                let count = (schema["type"] as? String) == "array" ? generator.next(4) : (chance(70) ? 1 : 0)
                for _ in 0..<count {
                    let value = name == "scope" ? scope(for: user) : pick(["true", "false", "yes", ""])
                    query.append("\(name)=\(Self.encode(value))")
                }
            case "header":
                if chance(70) { headers.append((name, headerValue(name))) }
            default: break
            }
        }
        let (authorization, requester) = token(for: user)
        if let authorization { headers.append(("Authorization", authorization)) }
        var body: [UInt8] = []
        var broken = false
        if let schema = operation.bodySchema, operation.bodyType == "application/json" {
            var value = tailor(generator.valid(schemaNamed: schema), schema: schema, for: user)
            if chance(25), let (what, mangled) = generator.broken(value, schemaNamed: schema) {
                value = mangled
                broken = true
                label += " (\(what.split(separator: " ").first ?? "broken"))"
            }
            body = Array((try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])) ?? Data())
            if chance(8), !body.isEmpty {
                // Bytes cut short or one byte changed: usually no longer JSON.
                if chance(50) { body = Array(body.prefix(generator.next(body.count))) } else { body[generator.next(body.count)] = UInt8(generator.next(256)) }
                label += " (mangled bytes)"
            }
            headers.append(("Content-Type", chance(95) ? "application/json" : pick(["text/plain", "application/json; charset=latin1", "", "multipart/form-data"])))
        } else if operation.bodyType != nil {
            body = chance(50) ? Array("blob bytes \(generator.next(1000))".utf8) : (0..<generator.next(200)).map { _ in UInt8(generator.next(256)) }
            headers.append(("Content-Type", "application/octet-stream"))
        }
        if chance(3) {
            method = pick(["DELETE", "PATCH", "OPTIONS", "TRACE", "GET", "POST"])
            label = "\(method) (other method) \(operation.path)"
            broken = false  // another operation may ignore the body
        }
        if chance(2) {
            path = "/v1/" + pick(["nothing", "push/extra", "rows", "blobs", "scopes/x/members", "%2e%2e/%2e%2e/etc/passwd"])
            label = "\(method) (unknown path)"
            broken = false
        }
        let target = query.isEmpty ? path : path + "?" + query.joined(separator: "&")
        return Generated(
            request: RawHTTP.Request(method: method, target: target, headers: headers, body: body),
            requester: requester, operation: "\(operation.method) \(operation.path)", label: label,
            broken: broken, memberScope: memberScope,
            isLive: path.hasPrefix("/v1/live") && method == "GET")
    }

    /// A valid body bent toward what matters here: other users' scopes,
    /// rows and cursors.
    mutating func tailor(_ value: Any, schema: String, for user: String) -> Any {
        switch schema {
        case "PushRequest":
            guard var push = value as? [String: Any], var mutations = push["mutations"] as? [[String: Any]] else { return value }
            for index in mutations.indices {
                if chance(80) { mutations[index]["scope"] = scope(for: user) }
                if chance(70) { mutations[index]["rowID"] = rowID(for: user) }
                if chance(70) { mutations[index]["table"] = "note" }
                if chance(50) { mutations[index]["baseVersion"] = generator.next(30) }
                if chance(50) {
                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    mutations[index]["hlc"] = (now - Int64(generator.next(100_000))) << 16
                }
            }
            push["mutations"] = mutations
            return push
        case "PullRequest":
            guard var pull = value as? [String: Any], let scopes = pull["scopes"] as? [[String: Any]] else { return value }
            var seen: Set<String> = []
            pull["scopes"] = scopes.compactMap { entry -> [String: Any]? in
                var entry = entry
                if chance(80) { entry["scope"] = scope(for: user) }
                if chance(40), !cursors.seen.isEmpty { entry["cursor"] = pick(cursors.seen) }
                if chance(20), !cursors.seen.isEmpty { entry["notices"] = pick(cursors.seen) }
                return seen.insert(entry["scope"] as? String ?? "").inserted ? entry : nil
            }
            return pull
        case "CreateScopeRequest":
            return ["scope": "list\(generator.next(50))@\(chance(80) ? user : pick(AccessModel.users))"]
        default:
            return value
        }
    }
}

extension APIFuzzer {
    /// The cursors answers carried, for later requests (by any user) to reuse.
    struct CursorCollector {
        var seen: [String] = []

        mutating func collect(from response: RawHTTP.Response) {
            let text = String(decoding: response.body, as: UTF8.self)
            guard text.contains("ursor") else { return }
            for key in ["\"cursor\":\"", "\"noticeCursor\":\""] {
                var rest = Substring(text)
                while let start = rest.range(of: key) {
                    rest = rest[start.upperBound...]
                    guard let end = rest.firstIndex(of: "\"") else { break }
                    seen.append(String(rest[..<end]))
                    rest = rest[end...]
                }
            }
            if seen.count > 200 { seen.removeFirst(seen.count - 200) }
        }
    }
}
