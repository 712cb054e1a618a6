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

    /// What the directory's `format` file says.
    var marker: String {
        isSealed ? "sealed 1\n" : "plain\n"
    }
}
