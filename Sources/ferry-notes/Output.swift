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
    static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isOutputInteractive }
    static var isErrorInteractive: Bool { isatty(STDERR_FILENO) == 1 }
    /// Whether standard output was a terminal when the command began (a
    /// ``Pager`` then takes it over, and it is a pipe to the pager).
    static var isOutputInteractive: Bool { outputWasTerminal }
    static let outputWasTerminal = isatty(STDOUT_FILENO) == 1

    /// Colour on a terminal, unless `NO_COLOR` is set (no-color.org) or the terminal is dumb.
    static var usesColor: Bool {
        let environment = ProcessInfo.processInfo.environment
        return isOutputInteractive && (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
    }

    /// Columns: the terminal's, else `$COLUMNS`, else 100.
    static var width: Int {
        terminalSize?.columns ?? ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init) ?? 100
    }

    /// The terminal's size when the command began, if standard output was one.
    static let terminalSize: (columns: Int, rows: Int)? = {
        var size = winsize()
        guard isatty(STDOUT_FILENO) == 1, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 else { return nil }
        return (Int(size.ws_col), Int(size.ws_row))
    }()

    /// A time as a person reads it on a terminal: relative within a week
    /// ("5 min ago", "yesterday 14:02"); elsewhere, and for older times, the date.
    static func when(_ milliseconds: Int64, now: Date = Date()) -> String {
        guard isOutputInteractive else { return time(milliseconds) }
        return relative(milliseconds, now: now)
    }

    static func relative(_ milliseconds: Int64, now: Date) -> String {
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let seconds = now.timeIntervalSince(date)
        guard seconds >= -60, seconds < 7 * 86_400 else { return time(milliseconds) }
        let clock = DateFormatter()
        clock.locale = Locale(identifier: "en_US_POSIX")
        clock.dateFormat = "HH:mm"
        switch seconds {
        case ..<60: return "just now"
        case ..<3_600: return "\(Int(seconds / 60)) min ago"
        case ..<(12 * 3_600): return "\(Int(seconds / 3_600)) h ago"
        default:
            let calendar = Calendar.current
            if calendar.isDate(date, inSameDayAs: now) { return "today \(clock.string(from: date))" }
            if let yesterday = calendar.date(byAdding: .day, value: -1, to: now), calendar.isDate(date, inSameDayAs: yesterday) {
                return "yesterday \(clock.string(from: date))"
            }
            clock.dateFormat = "EEE HH:mm"
            return clock.string(from: date)
        }
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
        var header = [fit("ID", id), fit("UPDATED", time), fit("AUTHOR", author), fit("TITLE", title), fit("CATEGORY", category), "TAGS"]
            .joined(separator: "  ")
        if usesColor { header = Style.boldStart + header + Style.boldEnd }
        return [header]
            + notes.map { note in
                [
                    fit(String(note.id.prefix(id)), id), fit(Terminal.when(note.updatedAt), time), fit(note.author, author),
                    fit(note.title, title), fit(note.category ?? "", category), fit(note.tags.joined(separator: ", "), tags),
                ]
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
            }
    }
}

/// Writes bytes to standard output. A reader that went away (the user
/// quit the pager, which ignores SIGPIPE for us) ends the command quietly.
func writeOut(_ data: Data) {
    do {
        try FileHandle.standardOutput.write(contentsOf: data)
    } catch {
        Pager.finish()
        exit(0)
    }
}

/// Writes to standard error, control characters made visible (a message
/// may quote a note's title or a server's reply).
func tell(_ text: String) {
    let line = Data((TerminalText.safe(Suggestion.naming(text)) + "\n").utf8)
    // While a pager shows the output, a note about it (the next page's command) is read there, after it.
    if Pager.isRunning {
        fflush(nil)
        writeOut(line)
    } else {
        FileHandle.standardError.write(line)
    }
}

/// Every line this command prints goes through here (it shadows the
/// standard library's `print` in this module): text from the database, or
/// from another user, is printed with its control characters made visible,
/// never obeyed by the terminal. JSON output is already escaped.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    Swift.print(Style.apply(TerminalText.safe(items.map { "\($0)" }.joined(separator: separator))), terminator: terminator)
}

/// Styling this program adds to its own output (bold headers, search
/// hits), written as private-use marks that survive ``TerminalText/safe(_:)``
/// and become SGR codes only at the end, where colour is wanted: text from
/// the database can never carry an escape sequence of its own.
enum Style {
    static let boldStart = "\u{E000}", boldEnd = "\u{E001}", hitStart = "\u{E002}", hitEnd = "\u{E003}"

    static func apply(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { (0xE000...0xE003).contains($0.value) }) else { return text }
        let color = Terminal.usesColor
        return text.replacingOccurrences(of: boldStart, with: color ? "\u{1B}[1m" : "")
            .replacingOccurrences(of: hitStart, with: color ? "\u{1B}[1;33m" : "")
            .replacingOccurrences(of: boldEnd, with: color ? "\u{1B}[0m" : "")
            .replacingOccurrences(of: hitEnd, with: color ? "\u{1B}[0m" : "")
    }
}
