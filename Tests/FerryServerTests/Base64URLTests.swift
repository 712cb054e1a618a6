@testable import FerryServer
import Foundation
import Testing

@Suite struct Base64URLTests {
    /// Every length from 0 to 64 bytes round-trips, and matches Foundation's
    /// base64 with the URL alphabet and no padding.
    @Test func itIsFoundationsBase64WithTheURLAlphabet() throws {
        var random = SystemRandomNumberGenerator()
        for length in 0...64 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let expected = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let text = Base64URL.encode(bytes)
            #expect(text == expected)
            if length > 0 { #expect(Base64URL.decode(text[...]) == bytes) }
        }
    }

    @Test(arguments: ["", "a", "abcde", "ab=c", "ab+c", "ab/c", "ab c", "abç"])
    func badTextIsRefused(text: String) {
        #expect(Base64URL.decode(text[...]) == nil)
    }
}
