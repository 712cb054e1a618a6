import GRDB

extension FerryDatabase {
    /// Copies the WAL into the database file and truncates the WAL to zero
    /// bytes. Waits for readers and writers to finish, up to the busy timeout.
    ///
    /// ```swift
    /// try database.checkpoint()
    /// ```
    public func checkpoint() throws {
        try writer.writeWithoutTransaction { db in
            _ = try db.checkpoint(.truncate)
        }
    }

    /// Runs `PRAGMA optimize`, which refreshes query-planner statistics where
    /// they are stale. Cheap; run it when the app goes to the background.
    public func optimize() throws {
        try writer.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA optimize")
        }
    }

    /// Rebuilds the database file, returning free pages to the file system.
    ///
    /// `VACUUM` needs exclusive access: it waits until every read and write in
    /// this process is done and blocks new ones while it runs, and it fails
    /// with `SQLITE_BUSY` if another process holds the database open in a
    /// transaction. It can take seconds on a large database and needs free
    /// disk space about twice the file's size.
    public func vacuum() throws {
        try writer.barrierWriteWithoutTransaction { db in
            try db.execute(sql: "VACUUM")
        }
    }
}
