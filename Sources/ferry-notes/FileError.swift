import Foundation

/// What went wrong with a file, in words (never `NSCocoaErrorDomain error 256`).
enum FileError {
    static func reason(_ error: any Error) -> String {
        var underlying = error as NSError
        while let next = underlying.userInfo[NSUnderlyingErrorKey] as? NSError { underlying = next }
        if underlying.domain == NSPOSIXErrorDomain, let code = POSIXErrorCode(rawValue: Int32(underlying.code)) {
            return String(cString: strerror(code.rawValue))
        }
        switch (error as? CocoaError)?.code {
        case .fileReadNoSuchFile?, .fileNoSuchFile?: return "no such file"
        case .fileReadNoPermission?, .fileWriteNoPermission?: return "permission denied"
        case .fileReadCorruptFile?: return "not readable"
        default: return (error as? CocoaError).map { _ in "it could not be read" } ?? "\(error)"
        }
    }
}
