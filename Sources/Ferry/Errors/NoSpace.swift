import Foundation
import GRDB

/// Whether an error means the disk is full, wherever it came from: SQLite's
/// `SQLITE_FULL` (or `SQLITE_IOERR_SHMSIZE`, its shared-memory index unable
/// to grow), or a file call's `ENOSPC` or `EDQUOT` as Foundation reports it.
enum NoSpace {
    static func means(_ error: any Error) -> Bool {
        if let error = error as? DatabaseError {
            return error.resultCode == .SQLITE_FULL || error.extendedResultCode == .SQLITE_IOERR_SHMSIZE
        }
        if let error = error as? FerryError { return error.code == .storageFull }
        let error = error as NSError
        if error.domain == NSPOSIXErrorDomain { return error.code == Int(ENOSPC) || error.code == Int(EDQUOT) }
        if error.domain == NSCocoaErrorDomain, error.code == CocoaError.fileWriteOutOfSpace.rawValue { return true }
        return (error.userInfo[NSUnderlyingErrorKey] as? NSError).map(means) ?? false
    }
}
