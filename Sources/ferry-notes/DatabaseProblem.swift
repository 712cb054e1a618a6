import FerryNotes
import Foundation
import GRDB

/// A SQLite error on the notes database, said as what it means for the
/// user's notes and what to do (never `SQLite error 26`).
enum DatabaseProblem {
    /// The error in words, naming the database; `nil` for an error with no
    /// better words than SQLite's own.
    static func explain(_ error: DatabaseError, database path: String) -> NotesError? {
        switch error.resultCode {
        case .SQLITE_READONLY:
            return NotesError(
                .failure,
                "\(path) is read-only for this user: reading commands work; a change needs write access to the file and its folder")
        case .SQLITE_CORRUPT:
            return damaged(path, reason: error.message ?? "\(error.resultCode)")
        case .SQLITE_NOTADB:
            return unreadable(path, reason: error.message ?? "\(error.resultCode)")
        case .SQLITE_FULL:
            return NotesError(.failure, "the disk holding \(path) is full; nothing was changed (free some space and run it again)")
        case .SQLITE_BUSY:
            return NotesError(.failure, "another program holds \(path) (a `watch` or `sync` still running?); nothing was changed, try again")
        case .SQLITE_CANTOPEN:
            return NotesError(.failure, "cannot open \(path): \(error.message ?? "no such file or no permission")")
        default:
            return nil
        }
    }

    /// A file SQLite cannot read at all (not a database, or its first page
    /// destroyed): what is safe, and how to get it back.
    static func unreadable(_ path: String, reason: String) -> NotesError {
        NotesError(
            .failure,
            """
            \(path) cannot be read (\(reason)). Notes already synced are safe on the server: move the file aside \
            with its -wal and -shm files, then `ferry-notes login` and `ferry-notes sync` fetch them
            """)
    }

    /// Whether `error` is SQLite finding the file damaged.
    static func isDamage(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
    }

    /// A damaged file: what is safe, and the commands that recover the rest.
    static func damaged(_ path: String, reason: String) -> NotesError {
        NotesError(
            .failure,
            """
            \(path) is damaged (\(reason)). Notes already synced are safe on the server. To recover: \
            `ferry-notes export --out saved.jsonl` saves every note still readable, unsynced ones too; \
            move the file aside with its -wal and -shm files; `ferry-notes login --server URL --token TOKEN` \
            and `ferry-notes sync` fetch what the server has; then `ferry-notes import --keep-existing saved.jsonl` \
            adds the notes it never had (for a note on both, the server's copy is kept: compare with saved.jsonl)
            """)
    }
}
