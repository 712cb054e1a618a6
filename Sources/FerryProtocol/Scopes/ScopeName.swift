/// The names of scopes: every row belongs to one.
///
/// A user owns `user:<id>`. Any other name is a shared scope, created by its
/// owner, whose members have read or write roles. Names are 1–200 characters
/// of letters, digits and `_ . : @ + -`.
///
/// ```swift
/// let mine = ScopeName.user("alice")          // "user:alice"
/// ScopeName.isValid("team:field-survey")       // true
/// ScopeName.owner(of: "user:alice")            // "alice"
/// ```
public enum ScopeName {
    /// The prefix of personal scopes.
    public static let userPrefix = "user:"

    /// The personal scope of a user.
    public static func user(_ userID: String) -> String {
        userPrefix + userID
    }

    /// The user a personal scope belongs to, or `nil` for a shared scope.
    public static func owner(of scope: String) -> String? {
        scope.hasPrefix(userPrefix) ? String(scope.dropFirst(userPrefix.count)) : nil
    }

    /// The name of a shared scope `owner` creates over the API:
    /// `<label>@<owner>`. Names live in their creator's namespace, so no
    /// two users ever contend for one, and trying a name tells nothing
    /// about another user's scopes.
    ///
    /// ```swift
    /// ScopeName.shared("groceries", ownedBy: "alice")   // "groceries@alice"
    /// ```
    public static func shared(_ label: String, ownedBy owner: String) -> String {
        "\(label)@\(owner)"
    }

    /// The user whose namespace a shared scope's name is in: what follows
    /// its first `@`, or `nil` when it has none (such names are created by
    /// the operator with `ferry-server grant`).
    public static func namespace(of scope: String) -> String? {
        guard let at = scope.firstIndex(of: "@") else { return nil }
        let owner = scope[scope.index(after: at)...]
        return owner.isEmpty ? nil : String(owner)
    }

    /// Whether `name` is a well-formed scope name.
    public static func isValid(_ name: String) -> Bool {
        guard (1...200).contains(name.utf8.count) else { return false }
        return name.utf8.allSatisfy(isAllowed)
    }

    /// Whether `id` is a well-formed user id (a token's subject).
    public static func isValidUserID(_ id: String) -> Bool {
        guard (1...128).contains(id.utf8.count) else { return false }
        return id.utf8.allSatisfy { isAllowed($0) && $0 != UInt8(ascii: ":") }
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "+"),
            UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}
