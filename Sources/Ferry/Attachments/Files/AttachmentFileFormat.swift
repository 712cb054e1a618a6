import Foundation

/// How the attachment files of one directory hold their bytes: as they
/// are, or sealed chunk by chunk with an ``AttachmentCipher``. Sizes on disk
/// follow from it, so a file is whole when its size is the stored size of
/// its attachment's bytes.
///
/// ```swift
/// let format = AttachmentFileFormat(cipher: configuration.attachmentCipher)
/// format.storedSize(plain: attachment.size)   // what a whole file measures on disk
/// ```
enum AttachmentFileFormat: Sendable {
    case plain
    case sealed(SealedFileLayout, any AttachmentCipher)

    init(cipher: (any AttachmentCipher)?) {
        self = cipher.map { .sealed(SealedFileLayout(overhead: $0.overhead), $0) } ?? .plain
    }

    var isSealed: Bool {
        if case .sealed = self { true } else { false }
    }

    /// The size on disk of a whole file of `plain` bytes.
    func storedSize(plain: Int64) -> Int64 {
        switch self {
        case .plain: plain
        case .sealed(let layout, _): layout.storedSize(plain: plain)
        }
    }

    /// What the directory's `format` file says: plain, or sealed with a
    /// check value sealed by the key, so a wrong key is caught at once.
    func marker() throws -> String {
        guard case .sealed(_, let cipher) = self else { return "plain\n" }
        return "sealed 1\n" + (try cipher.seal(Self.check, context: Self.check)).base64EncodedString() + "\n"
    }

    /// Why a directory whose `format` file says `marker` cannot be opened
    /// in this format, or `nil` when it can.
    func refusal(of marker: String) -> String? {
        let lines = marker.split(separator: "\n", omittingEmptySubsequences: false)
        let written = lines.first == "plain" ? "plain" : "sealed"
        switch self {
        case .plain:
            return written == "plain" ? nil : "are sealed, but this database opened them with no attachmentCipher"
        case .sealed(_, let cipher):
            guard written == "sealed" else { return "are plain, but this database opened them with an attachmentCipher" }
            guard lines.count > 1, let check = Data(base64Encoded: String(lines[1])) else { return nil }
            return (try? cipher.open(check, context: Self.check)) == Self.check
                ? nil : "were sealed with another key than the one this attachmentCipher holds"
        }
    }

    private static let check = Data("ferry attachment files".utf8)
}
