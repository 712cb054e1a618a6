/// A line diff, for showing two versions of a note's text side by side in
/// one column: lines only in the first prefixed `-`, only in the second
/// `+`, shared ` ` (longest common subsequence).
///
/// ```swift
/// LineDiff.lines(from: "a\nb", to: "a\nc")   // [" a", "-b", "+c"]
/// ```
public enum LineDiff {
    public static func lines(from old: String, to new: String) -> [String] {
        let a = old.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let b = new.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // Texts too long for a quadratic table are shown whole, one then the other.
        guard a.count * b.count <= 4_000_000 else { return a.map { "-" + $0 } + b.map { "+" + $0 } }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                table[i][j] = a[i] == b[j] ? table[i + 1][j + 1] + 1 : max(table[i + 1][j], table[i][j + 1])
            }
        }
        var result: [String] = []
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if i < a.count, j < b.count, a[i] == b[j] {
                result.append(" " + a[i]); i += 1; j += 1
            } else if i < a.count, j == b.count || table[i + 1][j] >= table[i][j + 1] {
                result.append("-" + a[i]); i += 1
            } else {
                result.append("+" + b[j]); j += 1
            }
        }
        return result
    }
}
