extension JSONScanner {
    /// A push's answer (``PullResponseReader/pushResponse(_:)``): results
    /// with conflicts or a row are declined, for `JSONDecoder` to read.
    mutating func pushResponse() throws -> PushResponse {
        var lastApplied: Int64?
        var results: [MutationResult]?
        var covered: [PushResponse.CoveredScope]?
        var seen = Set<String>()
        if try beginObject() {
            repeat {
                switch try key(once: &seen) {
                case "lastAppliedMutationID": lastApplied = try int64()
                case "results":
                    var read: [MutationResult] = []
                    if try beginArray() {
                        repeat { read.append(try mutationResult()) } while try nextElement()
                    }
                    results = read
                case "covered":
                    covered = try nullable { scanner in
                        var read: [PushResponse.CoveredScope] = []
                        if try scanner.beginArray() {
                            repeat { read.append(try scanner.coveredScope()) } while try scanner.nextElement()
                        }
                        return read
                    }
                default: try skipValue()
                }
            } while try nextMember()
        }
        guard let lastApplied, let results else { throw failure("a push answer without lastAppliedMutationID or results") }
        return PushResponse(lastAppliedMutationID: lastApplied, results: results, covered: covered)
    }

    /// One of a push answer's covered scopes.
    mutating func coveredScope() throws -> PushResponse.CoveredScope {
        var scope: String?, after: String?, cursor: String?, emptyBefore: Bool?
        var seen = Set<String>()
        if try beginObject() {
            repeat {
                switch try key(once: &seen) {
                case "scope": scope = try string()
                case "after": after = try string()
                case "cursor": cursor = try string()
                case "emptyBefore": emptyBefore = try nullable { try $0.bool() }
                default: try skipValue()
                }
            } while try nextMember()
        }
        guard let scope, let after, let cursor else { throw failure("a covered scope without scope, after or cursor") }
        return PushResponse.CoveredScope(scope: scope, after: after, cursor: cursor, emptyBefore: emptyBefore)
    }

    /// One result without conflicts or a row.
    mutating func mutationResult() throws -> MutationResult {
        var mutationID: Int64?, status: MutationResult.Status?, replayed: Bool?, noConflicts = false
        var result = MutationResult(mutationID: 0, status: .applied)
        // The keys read so far, one bit each for the known ones: a set of every key was two fifths of
        // reading a result, and a drain reads a thousand a push.
        var known: UInt8 = 0
        var others = Set<String>()
        if try beginObject() {
            repeat {
                let key = try key()
                let bit: UInt8 =
                    switch key {
                    case "mutationID": 1
                    case "status": 2
                    case "version": 4
                    case "reason": 8
                    case "replayed": 16
                    case "conflicts": 32
                    case "row": 64
                    default: 0
                    }
                if bit == 0 ? !others.insert(key).inserted : known & bit != 0 {
                    throw failure("the key \(key) given twice")
                }
                known |= bit
                switch key {
                case "mutationID": mutationID = try int64()
                case "status":
                    guard let read = MutationResult.Status(rawValue: try string()) else { throw failure("an unknown status") }
                    status = read
                case "version": result.version = try nullable { try $0.int64() }
                case "reason": result.reason = try nullable { try $0.string() }
                case "replayed": replayed = try bool()
                case "conflicts":
                    guard try !beginArray() else { throw failure("a result with conflicts") }
                    noConflicts = true
                case "row":
                    guard try nullable({ _ in () }) == nil else { throw failure("a result with a row") }
                default: try skipValue()
                }
            } while try nextMember()
        }
        guard let mutationID, let status, let replayed, noConflicts else {
            throw failure("a result without mutationID, status, conflicts or replayed")
        }
        result.mutationID = mutationID
        result.status = status
        result.replayed = replayed
        return result
    }
}
