/// An error the notes app explains in one line, with its exit code.
public struct NotesError: Error, Sendable, CustomStringConvertible {
    public enum Code: Int32, Sendable {
        case failure = 1
        case usage = 64
        case notFound = 3
        case ambiguous = 4
        case notSignedIn = 5
        case unreachable = 6
        case refused = 7
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
