/// Where a setting's value came from, named as the user wrote it: every
/// error about a value names its origin.
enum SettingOrigin: Sendable, Equatable, CustomStringConvertible {
    case flag(String)
    case environment(String)
    case file(path: String, key: String)
    case defaultValue

    /// Flags win over the environment, the environment over the file, the file over the default.
    var rank: Int {
        switch self {
        case .flag: 3
        case .environment: 2
        case .file: 1
        case .defaultValue: 0
        }
    }

    var description: String {
        switch self {
        case .flag(let flag): flag
        case .environment(let name): name
        case .file(let path, let key): "\(key) in \(path)"
        case .defaultValue: "default"
        }
    }
}

/// A setting that cannot be used, in one line naming it (and where it came from).
struct SettingsError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
