import Configuration
import Foundation
import Synchronization
import SystemPackage
import Yams

/// Every setting's value and where it came from: the flags given, the
/// `FERRY_*` environment and the `--config` file, merged by
/// swift-configuration's `ConfigReader` (flags > environment > file >
/// defaults).
///
/// ```swift
/// let settings = try await ResolvedSettings.resolve(flags: ["port": .integer(9090)], configFile: "ferry.yaml")
/// settings.integer("port")            // 9090
/// settings.origin(of: "port")         // .flag("--port")
/// ```
struct ResolvedSettings: Sendable {
    enum Content: Sendable, Equatable {
        case text(String)
        case integer(Int)
        case seconds(Double)
        case list([String])
    }

    struct Value: Sendable, Equatable {
        var content: Content
        var origin: SettingOrigin
    }

    private(set) var values: [String: Value]

    func value(_ key: String) -> Value? { values[key] }

    func origin(of key: String) -> SettingOrigin { values[key]?.origin ?? .defaultValue }

    /// How an error names the setting: where its value came from, or its flag when it has none.
    func name(_ key: String) -> String {
        guard let origin = values[key]?.origin, origin != .defaultValue else { return ServerSettings[key].flag }
        return origin.description
    }

    func text(_ key: String) -> String? {
        guard case .text(let text)? = values[key]?.content else { return nil }
        return text
    }

    func integer(_ key: String) -> Int? {
        guard case .integer(let value)? = values[key]?.content else { return nil }
        return value
    }

    func seconds(_ key: String) -> Double? {
        guard case .seconds(let value)? = values[key]?.content else { return nil }
        return value
    }

    func list(_ key: String) -> [String] {
        guard case .list(let values)? = values[key]?.content else { return [] }
        return values
    }

    /// Whether the setting was given (not its default).
    func isGiven(_ key: String) -> Bool { origin(of: key) != .defaultValue }
}

extension ResolvedSettings {
    /// Reads every setting of ``ServerSettings/all``.
    ///
    /// - Parameters:
    ///   - flags: the flags given, by setting key.
    ///   - configFile: a `.json`, `.yaml` or `.yml` file; a key it holds that is no setting is an error.
    ///   - environment: the process's environment; an empty variable counts as unset.
    ///   - keys: the settings a command uses (with their file twins); `nil` for all. The
    ///     others are not read, so a command never fails on a setting it does not use.
    /// - Throws: ``SettingsError`` naming the first setting that cannot be used.
    static func resolve(
        flags: [String: Content], configFile: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
        keys: Set<String>? = nil
    ) async throws(SettingsError) -> ResolvedSettings {
        let environment = environment.filter { !$0.value.isEmpty }
        var providers: [any ConfigProvider] = [
            InMemoryProvider(
                name: "flags",
                values: Dictionary(uniqueKeysWithValues: flags.map { (AbsoluteConfigKey(ConfigKey($0.key)), $0.value.configValue) })),
            EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "ferry"),
        ]
        var file: ConfigReader?
        if let configFile {
            let provider = try await fileProvider(configFile)
            providers.append(provider)
            file = ConfigReader(provider: provider)
        }
        let reporter = LookupRecorder()
        let reader = ConfigReader(providers: providers, accessReporter: reporter)
        var values: [String: Value] = [:]
        let used = keys.map { keys in Set(keys.flatMap { [$0, $0 + "File"] }) }
        for setting in ServerSettings.all where used?.contains(setting.key) ?? true {
            let key = ConfigKey(setting.key)
            let content: Content?
            switch setting.kind {
            case .text: content = reader.string(forKey: key, isSecret: setting.secret).map(Content.text)
            case .integer: content = reader.int(forKey: key).map(Content.integer)
            case .seconds: content = reader.double(forKey: key).map(Content.seconds)
            case .list: content = reader.stringArray(forKey: key).map(Content.list)
            }
            let lookup = reporter.last
            let origin: SettingOrigin = lookup.map { Self.origin(of: $0, setting: setting, configFile: configFile) } ?? .defaultValue
            // A number in a JSON file where text is read (a rate written `30`): the text of the number.
            if setting.kind == .text, lookup?.failed == true, lookup?.provider == 2, let configFile, isNumber(setting.key, in: configFile),
                let number = file?.double(forKey: key), number.isFinite
            {
                let text = number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
                values[setting.key] = Value(content: .text(text), origin: origin)
                continue
            }
            // `true` or `false` in the file where a number is read: swift-configuration reads them as 1 and 0.
            if setting.kind == .integer || setting.kind == .seconds, lookup?.failed == false, lookup?.provider == 2, let configFile,
                !isNumber(setting.key, in: configFile)
            {
                throw SettingsError("\(origin): \(expected(setting, got: nil))")
            }
            if let lookup, lookup.failed {
                // Only the environment's raw text is the user's own to show back.
                let raw = lookup.provider == 1 && !setting.secret ? environment[setting.environment] : nil
                throw SettingsError("\(origin): \(expected(setting, got: raw))")
            }
            if let content {
                values[setting.key] = Value(content: content, origin: origin)
            } else if let fallback = setting.defaultValue {
                values[setting.key] = Value(content: try parseDefault(fallback, setting), origin: .defaultValue)
            }
        }
        try readSecretFiles(&values)
        return ResolvedSettings(values: values)
    }

    /// The file's provider, after checking every key it holds is a setting.
    private static func fileProvider(_ path: String) async throws(SettingsError) -> any ConfigProvider {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SettingsError("--config \(path): cannot read it: \(error.localizedDescription)")
        }
        let isJSON = path.hasSuffix(".json")
        guard isJSON || path.hasSuffix(".yaml") || path.hasSuffix(".yml") else {
            throw SettingsError("--config \(path): name a .json, .yaml or .yml file")
        }
        let parsed: Any?
        do {
            parsed = isJSON ? try JSONSerialization.jsonObject(with: Data(text.utf8)) : try Yams.load(yaml: text)
        } catch {
            throw SettingsError("--config \(path): not valid \(isJSON ? "JSON" : "YAML"): \(error)")
        }
        try checkKeys(parsed ?? [String: Any](), prefix: "", path: path)
        do {
            return isJSON
                ? try await FileProvider<JSONSnapshot>(filePath: FilePath(path)) as any ConfigProvider
                : try await FileProvider<YAMLSnapshot>(filePath: FilePath(path)) as any ConfigProvider
        } catch {
            throw SettingsError("--config \(path): \(error)")
        }
    }

    /// Every leaf of the file is a setting's key, and every setting's key a leaf.
    private static func checkKeys(_ node: Any, prefix: String, path: String) throws(SettingsError) {
        let known = Set(ServerSettings.all.map(\.key))
        guard let mapping = Self.mapping(node) else {
            throw SettingsError("--config \(path): \(prefix.isEmpty ? "the file" : "`\(prefix)`") must be a mapping of settings")
        }
        for (name, child) in mapping {
            let key = prefix.isEmpty ? name : prefix + "." + name
            if known.contains(key) {
                if Self.mapping(child) != nil { throw SettingsError("\(key) in \(path): expected a value, not a mapping") }
                continue
            }
            guard known.contains(where: { $0.hasPrefix(key + ".") }), Self.mapping(child) != nil else {
                let near = suggestion(for: key, among: known).map { " (did you mean `\($0)`?)" } ?? ""
                throw SettingsError("\(key) in \(path): unknown setting\(near); `ferry-server config table` lists them")
            }
            try checkKeys(child, prefix: key, path: path)
        }
    }

    /// Whether the file holds a number (not `true` or `false`, which swift-configuration also reads as one) at `key`.
    private static func isNumber(_ key: String, in path: String) -> Bool {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), let root = try? Yams.load(yaml: text),
            let node = value(at: key.split(separator: ".")[...], in: root)
        else { return false }
        return (node is Int || node is Double) && !(node is Bool)
    }

    /// The value at a dotted key, nested (`limits: {maxBodyBytes: …}`),
    /// flat (`limits.maxBodyBytes: …`) or anything between, as the file has it.
    private static func value(at parts: ArraySlice<Substring>, in node: Any) -> Any? {
        guard !parts.isEmpty else { return node }
        guard let mapping = mapping(node) else { return nil }
        for count in stride(from: parts.count, through: 1, by: -1) {
            if let child = mapping[parts.prefix(count).joined(separator: ".")], let found = value(at: parts.dropFirst(count), in: child) {
                return found
            }
        }
        return nil
    }

    /// A mapping as JSON or YAML reads it, with text keys.
    private static func mapping(_ node: Any) -> [String: Any]? {
        if let mapping = node as? [String: Any] { return mapping }
        guard let mapping = node as? [AnyHashable: Any] else { return nil }
        return Dictionary(uniqueKeysWithValues: mapping.map { ("\($0.key)", $0.value) })
    }

    /// `FERRY_*` variables that are no setting but look like a mistyped one,
    /// each with the variable meant. (Others, such as a test harness's, are left alone.)
    static func mistypedVariables(in environment: [String: String]) -> [(given: String, meant: String)] {
        let known = Set(ServerSettings.all.map(\.environment) + ["FERRY_CONFIG"])
        return environment.keys.sorted().compactMap { name in
            guard name.hasPrefix("FERRY_"), !known.contains(name), let meant = suggestion(for: name, among: known) else { return nil }
            return (name, meant)
        }
    }

    /// The known key closest to a mistyped one, if any is close.
    static func suggestion(for key: String, among known: Set<String>) -> String? {
        func distance(_ a: String, _ b: String) -> Int {
            let (a, b) = (Array(a.lowercased()), Array(b.lowercased()))
            guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
            var row = Array(0...b.count)
            for i in 1...a.count {
                var previous = row[0]
                row[0] = i
                for j in 1...b.count {
                    let current = row[j]
                    let substitution = previous + (a[i - 1] == b[j - 1] ? 0 : 1)
                    row[j] = min(row[j] + 1, row[j - 1] + 1, substitution)
                    previous = current
                }
            }
            return row[b.count]
        }
        var best: (key: String, distance: Int)?
        for candidate in known.sorted() {
            let d = distance(key, candidate)
            if best == nil || d < best!.distance { best = (candidate, d) }
        }
        guard let best, best.distance <= max(2, key.count / 4) else { return nil }
        return best.key
    }

    private static func origin(of lookup: LookupRecorder.Lookup, setting: Setting, configFile: String?) -> SettingOrigin {
        switch lookup.provider {
        case 0: .flag(setting.flag)
        case 1: .environment(setting.environment)
        case 2: .file(path: configFile ?? "", key: setting.key)
        default: .defaultValue
        }
    }

    private static func expected(_ setting: Setting, got raw: String?) -> String {
        let what =
            switch setting.kind {
            case .text: "expected text"
            case .integer: "expected a whole number"
            case .seconds: "expected a number of seconds"
            case .list: "expected a list (comma-separated in the environment)"
            }
        return what + (raw.map { ", got `\($0)`" } ?? "")
    }

    private static func parseDefault(_ text: String, _ setting: Setting) throws(SettingsError) -> Content {
        switch setting.kind {
        case .text: return .text(text)
        case .integer:
            guard let value = Int(text) else { throw SettingsError("the default of \(setting.key) is not a whole number") }
            return .integer(value)
        case .seconds:
            guard let value = Double(text) else { throw SettingsError("the default of \(setting.key) is not a number") }
            return .seconds(value)
        case .list: return .list(text.split(separator: ",").map(String.init))
        }
    }

    /// A secret given through its file twin: the file's content, trimmed.
    /// Given both ways at the same level (two variables, two flags, two keys), it is an error.
    private static func readSecretFiles(_ values: inout [String: Value]) throws(SettingsError) {
        for setting in ServerSettings.declared {
            guard let twin = setting.fileCompanion, let file = values[twin.key] else { continue }
            if let direct = values[setting.key] {
                guard direct.origin.rank != file.origin.rank else {
                    throw SettingsError("\(direct.origin) and \(file.origin) both set \(setting.key): give one")
                }
                if direct.origin.rank > file.origin.rank { continue }
            }
            guard case .text(let path) = file.content else { continue }
            let secret: String
            do {
                secret = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            } catch {
                throw SettingsError("\(file.origin): cannot read \(path): \(error.localizedDescription)")
            }
            guard !secret.isEmpty else { throw SettingsError("\(file.origin): \(path) is empty") }
            values[setting.key] = Value(content: .text(secret), origin: file.origin)
        }
    }
}

extension ResolvedSettings.Content {
    var configValue: ConfigValue {
        switch self {
        case .text(let text): ConfigValue(.string(text), isSecret: false)
        case .integer(let value): ConfigValue(.int(value), isSecret: false)
        case .seconds(let value): ConfigValue(.double(value), isSecret: false)
        case .list(let values): ConfigValue(.stringArray(values), isSecret: false)
        }
    }
}

/// Which provider answered the last lookup, or failed it: swift-configuration
/// reports every lookup to its access reporter.
private final class LookupRecorder: AccessReporter, Sendable {
    struct Lookup: Sendable {
        /// The index of the provider that answered (0 flags, 1 environment, 2 file).
        var provider: Int
        /// Whether it answered with an error: a value that is not of the setting's kind.
        var failed: Bool
    }

    private let lookup = Mutex<Lookup?>(nil)

    var last: Lookup? { lookup.withLock { $0 } }

    func report(_ event: AccessEvent) {
        // The first provider that had a value for the key, or failed on it.
        let found = event.providerResults.enumerated().lazy.compactMap { index, answer -> Lookup? in
            switch answer.result {
            case .success(let result): result.value == nil ? nil : Lookup(provider: index, failed: false)
            case .failure: Lookup(provider: index, failed: true)
            }
        }.first
        lookup.withLock { $0 = found }
    }
}
