@testable import FerryNotes
import FerryTestSupport
import Foundation
import Testing

/// What `ferry-notes` prints from the database is never obeyed by the
/// terminal, and search builds its snippet in one pass over a hit.
@Suite struct NotesTextSafetyTests {
    static let evil = "Evil \u{1B}[31mRED\u{1B}[0m \u{1B}]0;pwned-title\u{07} title \u{9B}2J \u{7F}"

    @Test func controlCharactersAreShownNotObeyed() {
        let safe = TerminalText.safe(Self.evil + "\nsecond\tline")
        #expect(safe == "Evil ^[[31mRED^[[0m ^[]0;pwned-title^G title \\u{9B}2J ^?\nsecond\tline")
        #expect(!safe.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" && $0 != "\t" || (0x7F...0x9F).contains($0.value) })
        #expect(TerminalText.line("a\nb\tc") == "a b c")
        #expect(TerminalText.safe("plain café ☕ 漢字") == "plain café ☕ 漢字")
        // JSON keeps the data exactly: JSON escapes C0 itself, DEL and C1 are escaped here.
        let json = TerminalText.jsonSafe(#"{"title":"a\u001b b"# + "\u{7F}\u{9B}\"}")
        #expect(json == #"{"title":"a\u001b b\u007f\u009b"}"#)
        let decoded = try? JSONDecoder().decode([String: String].self, from: Data(json.utf8))
        #expect(decoded?["title"] == "a\u{1B} b\u{7F}\u{9B}")
    }

    @Test func aSnippetIsTheWordsAroundTheFirstMatch() throws {
        #expect(SearchSnippet.make(text: "no match here", words: ["cafe"], highlight: ("[", "]")) == nil)
        #expect(SearchSnippet.make(text: "Café crème", words: ["cafe"], highlight: ("[", "]")) == "[Café] crème")
        // Accents on either side, other scripts, emoji between words, a query word longer than the token.
        #expect(SearchSnippet.make(text: "un CAFE noir", words: ["café"], highlight: ("[", "]")) == "un [CAFE] noir")
        #expect(SearchSnippet.make(text: "東京 ☕ 漢字テスト end", words: ["漢字"], highlight: ("[", "]")) == "東京 ☕ [漢字テスト] end")
        #expect(SearchSnippet.make(text: "ca cafe", words: ["cafes"], highlight: ("[", "]")) == nil)
        #expect(SearchSnippet.make(text: "Ünïcode résumé", words: ["RESU"], highlight: ("<", ">")) == "Ünïcode <résumé>")
        // Prefixes, case and accents, as FTS5 matches them; punctuation kept as it was.
        #expect(
            SearchSnippet.make(text: "Coffee at the CAFÉ, on the corner.", words: ["caf", "corn"], highlight: ("[", "]"))
                == "Coffee at the [CAFÉ], on the [corner].")
        var words = (0..<40).map { "w\($0)" }
        words[20] = "cafe"
        words[22] = "cafeteria"
        let snippet = try #require(SearchSnippet.make(text: words.joined(separator: " "), words: ["cafe"], highlight: ("<", ">")))
        #expect(snippet == "…w16 w17 w18 w19 <cafe> w21 <cafeteria> w23 w24 w25 w26 w27…")
    }

    /// The issue's case: a 5 MB note that matches thousands of times took
    /// 2.5 minutes with FTS5's `snippet()`; one pass now.
    @Test func searchingAHugeMatchingNoteIsFast() throws {
        let directory = try TemporaryDirectory()
        let library = try NotesSchemaTests.library(directory)
        let paragraph = String(repeating: "lorem ipsum coffee dolor sit amet ", count: 20) + "\n"
        let body = String(repeating: paragraph, count: 5_000_000 / paragraph.utf8.count)
        let note = try library.add(title: "Big", body: body)
        _ = try library.add(title: "Small", body: "coffee at the corner")
        let clock = ContinuousClock()
        let start = clock.now
        let hits = try library.search("coffee")
        let elapsed = clock.now - start
        #expect(Set(hits.map(\.note.id)).contains(note.id))
        #expect(hits.first { $0.note.id == note.id }?.snippet.contains("[coffee]") == true)
        #expect(elapsed < .seconds(2), "a 5 MB matching note searched in \(elapsed)")
        print("search of a 5 MB matching note: \(elapsed)")
    }
}
