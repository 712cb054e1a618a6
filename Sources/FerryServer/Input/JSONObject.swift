/// A JSON object's members, in the order the text gave them, each key once.
///
/// A request's objects are small (a mutation has eight members, a column
/// value one), and a key is found by comparing it with each: hashing every
/// key into a `Dictionary` to build it, and again to look a member up, was
/// the largest part of reading a push. From ``indexedFrom`` members on, keys
/// are also kept in a hash table, so a large object (a body sent to wear the
/// server out) is never read in quadratic time.
///
/// ```swift
/// var object: JSONObject = ["a": .number("1")]
/// object.updateValue(.string("x"), forKey: "b")   // nil: "b" was not there
/// object["a"]                                       // .number("1")
/// for (key, value) in object { print(key, value) }  // a, then b
/// ```
struct JSONObject: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    typealias Element = (key: String, value: JSONValue)

    /// From this many members on, keys are found through a hash table.
    static let indexedFrom = 16

    private var members: [Element] = []
    private var positions: [String: Int]?

    init() {}

    init(dictionaryLiteral elements: (String, JSONValue)...) {
        for (key, value) in elements {
            precondition(updateValue(value, forKey: key) == nil, "a JSON object literal repeats the key \(key)")
        }
    }

    var count: Int { members.count }
    var isEmpty: Bool { members.isEmpty }
    var keys: [String] { members.map(\.key) }
    var values: [JSONValue] { members.map(\.value) }

    func makeIterator() -> IndexingIterator<[Element]> {
        members.makeIterator()
    }

    /// The member named `key`; setting `nil` removes it.
    subscript(key: String) -> JSONValue? {
        get { position(of: key).map { members[$0].value } }
        set {
            if let newValue {
                updateValue(newValue, forKey: key)
            } else if let position = position(of: key) {
                members.remove(at: position)
                positions = nil
                reindex()
            }
        }
    }

    /// Sets the member named `key`, keeping its place if it was there, and
    /// returns the value it replaced.
    @discardableResult
    mutating func updateValue(_ value: JSONValue, forKey key: String) -> JSONValue? {
        if let position = position(of: key) {
            defer { members[position].value = value }
            return members[position].value
        }
        members.append((key, value))
        if positions != nil {
            positions?[key] = members.count - 1
        } else {
            reindex()
        }
        return nil
    }

    static func == (left: JSONObject, right: JSONObject) -> Bool {
        left.count == right.count && left.allSatisfy { right[$0.key] == $0.value }
    }

    private func position(of key: String) -> Int? {
        if let positions { return positions[key] }
        return members.firstIndex { $0.key == key }
    }

    private mutating func reindex() {
        guard positions == nil, members.count >= Self.indexedFrom else { return }
        positions = Dictionary(uniqueKeysWithValues: members.enumerated().map { ($1.key, $0) })
    }
}
