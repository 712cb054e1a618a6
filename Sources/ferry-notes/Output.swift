import Ferry
import Foundation
import FerryNotes
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How output fits the terminal: its width, whether it is one, times and
/// columns.
enum Terminal {
    static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }
    static var isErrorInteractive: Bool { isatty(STDERR_FILENO) == 1 }
    static var isOutputInteractive: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Columns: the terminal's, else `$COLUMNS`, else 100.
    static var width: Int {
        var size = winsize()
        if isatty(STDOUT_FILENO) == 1, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 { return Int(size.ws_col) }
        return ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init) ?? 100
    }

    static func time(_ milliseconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// `text` in `width` terminal cells, with `…` where it was cut.
    static func fit(_ text: String, _ width: Int) -> String { TerminalText.fit(text, width) }

    /// Rows of notes in columns that fit the terminal: id, updated, author,
    /// title, category, tags (title and tags share what is left).
    static func table(_ notes: [Note]) -> [String] {
        let id = 8, time = 16, author = min(12, max(6, notes.map { TerminalText.cells($0.author) }.max() ?? 6))
        let category = min(12, max(8, notes.compactMap(\.category).map(TerminalText.cells).max() ?? 8))
        var flexible = max(20, width - id - time - author - category - 10)
        var title = flexible * 3 / 5
        // Into a pipe with no width asked for ($COLUMNS), titles and tags whole: a script reads them all.
        if isatty(STDOUT_FILENO) != 1, (ProcessInfo.processInfo.environment["COLUMNS"] ?? "").isEmpty {
            title = max(5, notes.map { TerminalText.cells($0.title) }.max() ?? 5)
            flexible = title + max(4, notes.map { TerminalText.cells($0.tags.joined(separator: ", ")) }.max() ?? 4)
        }
        let tags = flexible - title
        let header = [fit("ID", id), fit("UPDATED", time), fit("AUTHOR", author), fit("TITLE", title), fit("CATEGORY", category), "TAGS"]
            .joined(separator: "  ")
        return [header]
            + notes.map { note in
                [
                    fit(String(note.id.prefix(id)), id), fit(Terminal.time(note.updatedAt), time), fit(note.author, author),
                    fit(note.title, title), fit(note.category ?? "", category), fit(note.tags.joined(separator: ", "), tags),
                ]
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
            }
    }
}

/// The commands a run suggests (`ferry-notes sync`, a `more:` page) name
/// the database the run was given with `--db`, so a copied suggestion
/// opens that database, not the default one.
///
/// ```swift
/// Suggestion.command("conflicts")   // "ferry-notes --db /tmp/a.sqlite conflicts"
/// ```
enum Suggestion {
    static let invocation = Locked("ferry-notes")

    static func given(database: String) {
        let safe = database.allSatisfy { $0.isLetter && $0.isASCII || $0.isNumber || "/._-+,:@".contains($0) }
        let quoted = safe ? database : "'" + database.replacingOccurrences(of: "'", with: "'\\''") + "'"
        invocation.withLock { $0 = "ferry-notes --db \(quoted)" }
    }

    /// Edits between two words (Levenshtein), for "did you mean".
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var diagonal = row[0]
            row[0] = i
            for j in 1...b.count {
                let above = row[j]
                row[j] = min(above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1))
                diagonal = above
            }
        }
        return row[b.count]
    }

    static func command(_ arguments: String) -> String { "\(invocation.withLock { $0 }) \(arguments)" }

    /// `text` with every `` `ferry-notes …` `` it suggests naming this run's database.
    static func naming(_ text: String) -> String {
        let invocation = self.invocation.withLock { $0 }
        guard invocation != "ferry-notes" else { return text }
        return text.replacingOccurrences(of: "`ferry-notes ", with: "`\(invocation) ")
    }
}

/// Writes to standard error, control characters made visible (a message
/// may quote a note's title or a server's reply).
func tell(_ text: String) {
    FileHandle.standardError.write(Data((TerminalText.safe(Suggestion.naming(text)) + "\n").utf8))
}

/// Every line this command prints goes through here (it shadows the
/// standard library's `print` in this module): text from the database, or
/// from another user, is printed with its control characters made visible,
/// never obeyed by the terminal. JSON output is already escaped.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    Swift.print(TerminalText.safe(items.map { "\($0)" }.joined(separator: separator)), terminator: terminator)
}
