/// A small line chart as inline SVG, drawn by the server: no script, no
/// library, readable by a screen reader through its title.
///
/// ```swift
/// let svg = ConsoleChart.line([1, 3, 2], title: "pushes per second")
/// ```
enum ConsoleChart {
    static let width = 300.0
    static let height = 60.0

    /// `values` left to right (oldest first); a `nil` is a gap.
    static func line(_ values: [Double?], title: String, unit: String = "") -> ConsoleHTML {
        let top = max(values.compactMap { $0 }.max() ?? 0, 1e-9)
        let step = values.count > 1 ? width / Double(values.count - 1) : 0
        var path = "", dots = ""
        for (index, value) in values.enumerated() {
            guard let value else { continue }
            let x = Double(index) * step, y = height - 4 - (value / top) * (height - 8)
            let joined = index > 0 && values[index - 1] != nil
            path += (joined ? " L" : " M") + format(x) + " " + format(y)
            // A point with no neighbour draws no line: a dot shows it.
            if !joined, index + 1 >= values.count || values[index + 1] == nil {
                dots += "<circle cx=\"\(format(x))\" cy=\"\(format(y))\" r=\"3\" fill=\"currentColor\"/>"
            }
        }
        let latest = values.last.flatMap { $0 }.map { format($0) + unit } ?? "—"
        let peak = format(values.compactMap { $0 }.max() ?? 0) + unit
        return """
            <figure class="chart"><svg role="img" viewBox="0 0 \(Int(width)) \(Int(height))" width="100%" height="\(Int(height))" \
            preserveAspectRatio="none" aria-label="\(title): latest \(latest), peak \(peak)"><title>\(title)</title>\
            <path d="\(path)" fill="none" stroke="currentColor" stroke-width="2" vector-effect="non-scaling-stroke"/>\(ConsoleHTML(markup: dots))</svg>\
            <figcaption>\(title): latest <strong>\(latest)</strong>, peak \(peak)</figcaption></figure>
            """
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e9 ? String(Int(value)) : String(format: "%.2f", value)
    }
}
