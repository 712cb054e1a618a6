import Foundation

/// Reads an HTTP `Retry-After` header: a number of seconds, or an HTTP date
/// (RFC 9110 §10.2.3; the IMF-fixdate form and the two obsolete forms a
/// recipient must accept). A date in the past means "now".
///
/// ```swift
/// RetryAfter.delay("120", now: now)                              // 120 s
/// RetryAfter.delay("Sun, 06 Nov 1994 08:49:37 GMT", now: now)    // until then, or .zero
/// ```
package enum RetryAfter {
    package static func delay(_ header: String, now: Date) -> Duration? {
        let text = header.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(text) {
            return seconds >= 0 ? .seconds(seconds) : nil
        }
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) {
                let seconds = date.timeIntervalSince(now)
                return seconds > 0 ? .milliseconds(Int64((seconds * 1000).rounded(.up))) : .zero
            }
        }
        return nil
    }

    /// IMF-fixdate, RFC 850 and asctime.
    private static let formats = [
        "EEE, dd MMM yyyy HH:mm:ss 'GMT'",
        "EEEE, dd-MMM-yy HH:mm:ss 'GMT'",
        "EEE MMM d HH:mm:ss yyyy",
    ]
}
