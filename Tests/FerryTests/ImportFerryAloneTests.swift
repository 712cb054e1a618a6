import Ferry
import Testing

/// The types an app names to handle conflicts come with `import Ferry`
/// alone (this file imports nothing else).
@Suite struct ImportFerryAloneTests {
    @Test func conflictTypesAreNamedWithFerryAlone() {
        let value: ColumnValue = .text("mine")
        let policy: ConflictPolicy = .serverWins
        let kind: Conflict.Kind = .updateLostToDelete
        let choice: ConflictChoice = .merged(["title": value])
        let row = ServerRow(version: 3, deleted: false, values: ["title": value])
        #expect(policy.rawValue == "serverWins" && kind.rawValue == "updateLostToDelete")
        #expect(choice != .mine && row.values["title"] == value)
    }
}
