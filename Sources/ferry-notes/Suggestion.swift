import Ferry
import Foundation

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
        invocation.withLock { $0 = "ferry-notes --db \(quoted(database))" }
    }

    /// `word` as a POSIX shell reads it back: as it is when it is plain, else in single quotes.
    static func quoted(_ word: String) -> String {
        let plain = !word.isEmpty && word.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) || "/._-+,:@".contains($0) }
        return plain ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
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
