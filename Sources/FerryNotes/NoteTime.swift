import Foundation

/// A time a user types for `ls --since/--until`: a day (`2026-11-01`, at
/// local midnight), a day and time (`2026-11-01T14:30`, local), or an age
/// back from now (`90m`, `12h`, `7d`, `2w`).
///
/// ```swift
/// NoteTime.parse("7d", now: now)            // now minus seven days, in milliseconds
/// NoteTime.parse("2026-11-01", now: now)    // that day's start, here
/// ```
public enum NoteTime {
    /// Milliseconds since 1970, or `nil` for text that is none of the forms.
    public static func parse(_ text: String, now: Date = Date(), timeZone: TimeZone = .current) -> Int64? {
        if let unit = text.last, let amount = Int(text.dropLast()), amount >= 0 {
            let seconds: Int? =
                switch unit {
                case "m": 60
                case "h": 3_600
                case "d": 86_400
                case "w": 7 * 86_400
                default: nil
                }
            if let seconds { return Int64((now.timeIntervalSince1970 - Double(amount * seconds)) * 1000) }
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        for format in ["yyyy-MM-dd", "yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd HH:mm", "yyyy-MM-dd'T'HH:mm:ss"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        }
        return nil
    }

    /// `--since` and `--until` as typed, read; either may be absent.
    ///
    /// - throws: ``NotesError`` `.usage` naming the option whose text is
    ///   none of the forms.
    public static func options(since: String?, until: String?, now: Date = Date()) throws -> (since: Int64?, until: Int64?) {
        func read(_ name: String, _ text: String?) throws -> Int64? {
            guard let text else { return nil }
            guard let time = parse(text, now: now) else {
                throw NotesError(.usage, "\(name) \(text): give a day (2026-11-01), a day and time (2026-11-01T14:30) or an age (12h, 7d, 2w)")
            }
            return time
        }
        return (try read("--since", since), try read("--until", until))
    }

    /// `milliseconds` in a form ``parse(_:now:timeZone:)`` reads back exactly (to the second).
    public static func text(_ milliseconds: Int64, timeZone: TimeZone = .current) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
