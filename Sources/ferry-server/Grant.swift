import ArgumentParser
import FerryProtocol
import FerryServer
import Foundation

struct Grant: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Give a user a role in a shared scope, creating the scope if needed."
    )

    @OptionGroup var options: ServerOptions
    @OptionGroup var storeOptions: StoreOptions

    @Option(help: "The shared scope, such as team:survey.")
    var scope: String

    @Option(help: "The user id.")
    var user: String

    @Option(help: "read or write.")
    var role: ScopeRole

    func validate() throws {
        guard ScopeName.isValid(scope), ScopeName.owner(of: scope) == nil else {
            throw ValidationError("--scope \(scope): a shared scope name (letters, digits, _ . : @ + -), not a user: scope")
        }
        guard ScopeName.isValidUserID(user) else {
            throw ValidationError("--user \(user): 1–128 letters, digits or _ . @ + -")
        }
    }

    func run() async throws {
        let settings = try await options.settings(storeOptions.flags, keys: ServerOptions.storeKeys)
        try await settings.withStore { store in
            do {
                try await store.createScope(scope, owner: nil)
            } catch let error as FerryServerError where error.code == .alreadyExists {}
            try await store.setMember(user, role: role, in: scope)
        }
        print("\(user) has \(role.rawValue) access to \(scope)")
    }
}

extension ScopeRole: ExpressibleByArgument {}
