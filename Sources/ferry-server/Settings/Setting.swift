/// One setting of `ferry-server`, under the three names it answers to: a
/// key in the configuration file, a `FERRY_*` environment variable and a
/// flag. ``ServerSettings/all`` lists every one; the flags' help, the
/// README's table and `ferry-server config check` all come from it.
///
/// ```swift
/// let port = ServerSettings["port"]
/// port.environment   // "FERRY_PORT"
/// port.flag          // "--port"
/// ```
struct Setting: Sendable {
    enum Kind: Sendable, Equatable {
        case text
        case integer
        /// A number of seconds (fractions allowed).
        case seconds
        /// Repeatable: a list in the file, comma-separated in the environment, the flag given again.
        case list
    }

    /// The key in the configuration file, dotted: `connections.idleTimeout`.
    let key: String
    /// The flag's name, without its dashes.
    let flagName: String
    let kind: Kind
    /// The value when none is given, as it would be written; `nil` when there is none.
    let defaultValue: String?
    let help: String
    /// Never printed; may come from a file instead (``fileCompanion``).
    let secret: Bool

    init(_ key: String, flag: String, _ kind: Kind, default defaultValue: String? = nil, secret: Bool = false, _ help: String) {
        self.key = key
        self.flagName = flag
        self.kind = kind
        self.defaultValue = defaultValue
        self.secret = secret
        self.help = help
    }

    var flag: String { "--" + flagName }

    /// The environment variable: `FERRY_` and the key in capitals, a word
    /// boundary or a dot written `_` (swift-configuration's encoding).
    var environment: String { "FERRY_" + Self.environmentName(key) }

    /// A secret's twin naming a file that holds it: `jwtSecretFile`,
    /// `FERRY_JWT_SECRET_FILE`, `--jwt-secret-file`. The secret stays out of
    /// the process list and the configuration file.
    var fileCompanion: Setting? {
        guard secret else { return nil }
        return Setting(key + "File", flag: flagName + "-file", .text, "A file holding \(key), so the secret stays out of the process list and the settings file; its content, trimmed, is the value.")
    }

    /// One line for `--help`: what it is, its default, and its other two names.
    var helpLine: String {
        let fallback = defaultValue.map { " Default: \($0)." } ?? ""
        return "\(help)\(fallback) (file: \(key), env: \(environment))"
    }

    static func environmentName(_ key: String) -> String {
        key.split(separator: ".").map { component in
            var word = ""
            var previous: Character?
            for character in component {
                if let previous, previous.isLowercase, character.isUppercase { word.append("_") }
                word.append(character)
                previous = character
            }
            return word.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
        }.joined(separator: "_")
    }
}
