import FerryProtocol

/// Decides every step of one sync: what to push next, how to react to each
/// reply and failure, which scopes to pull, when to wait and when to stop.
///
/// It is synchronous and does no I/O (the model is PostgresNIO's
/// `PoolStateMachine`): ``SyncEngine`` performs each ``Action`` and reports
/// what came of it as an ``Event``, which yields the next action. The
/// random source for backoff jitter is injected, so tests drive every path
/// with no socket, no file and no sleeping.
///
/// A sync runs: the identity check (once per engine), the refetch of tables
/// whose schema grew, the push of every pending mutation, the read-back of
/// rows whose refused edits were discarded, the pull of every followed
/// scope, and, when the database turned out to be a restored copy, a second
/// push under the new identity.
///
/// ```swift
/// var machine = SyncStateMachine(settings: settings, identityChecked: false, random: { 0.5 })
/// var action = machine.start()                         // .checkIdentity
/// action = machine.handle(.identityChecked(renewed: false))   // .refetchGrownTables
/// ```
struct SyncStateMachine {
    struct Settings: Sendable, Hashable {
        var scopes: [String]
        var pushBatchSize: Int
        var retry: RetryPolicy
        /// Transient failures one sync absorbs before it gives up; `nil`
        /// retries without limit (the background loop).
        var attempts: Int?
        /// Server errors (5xx but 502–504) one mutation pushed alone may meet
        /// before it is set aside, so it cannot hold the queue forever.
        var poisonAttempts = 5
        /// Push, and pull only to recover: from a server that lost history,
        /// or after the database took a new identity (``SyncEngine/push()``).
        var pushOnly = false
    }

    enum Action: Equatable, Sendable {
        /// Ask the server how far it got with this client (an empty push).
        case checkIdentity
        /// Refetch the tables whose schema grew since their rows were pulled.
        case refetchGrownTables
        /// Take the next batch of at most `limit` mutations and push it.
        case push(limit: Int)
        /// Renumber the unsent mutations after the server's last applied id.
        case renumber(after: Int64)
        /// Take a new client id: another copy of the database pushes under
        /// this one. Mutations handed out up to `appliedThrough` were applied
        /// (both copies hold them); every other is renumbered under the new id.
        case renewIdentity(appliedThrough: Int64)
        /// Set the mutation of the last batch (a batch of one) aside, as rejected.
        case setAside(reason: String)
        /// Send an empty push: a server that answers it is not down, so a
        /// mutation it keeps failing on is the mutation's fault.
        case probe
        /// Read back the rows whose refused edits were discarded.
        case readBackRows
        /// Pull these scopes, one page each.
        case pull([String])
        /// Drop a scope's cursor: the server no longer accepts it.
        case resetCursor(scope: String)
        /// Drop a scope's notice cursor.
        case resetNoticeCursor(scope: String)
        /// Ask for a new token.
        case refreshToken
        /// Wait before going on (a backoff).
        case wait(Duration)
        /// The sync is done; these scopes were refused and skipped.
        case finish(refusedScopes: [String])
        /// The sync stops with the failure the last event carried.
        case fail(Stop)
    }

    /// Why a sync stops early.
    enum Stop: Equatable, Sendable {
        /// Transient failures used up the attempts.
        case gaveUp(attempts: Int)
        /// The token was refused and no new one came.
        case unauthorized
        /// The server refuses the request as sent.
        case refused
        /// Not a transport failure (the local database, say).
        case fatal
    }

    enum Event: Sendable {
        /// `historyLost`: the server applied less than it acknowledged; every
        /// scope was started over as a recovery, pulled before any push.
        /// `verifying`: the file is a copy behind the server holding that many
        /// handed-out mutations; the first push sends only those, for the
        /// server to compare with what it applied.
        case identityChecked(renewed: Bool, historyLost: Bool = false, verifying: Int = 0)
        case tablesRefetched
        /// A batch of `size` mutations was acknowledged; `renewed` when the
        /// reply showed the database is a restored copy (it took a new identity).
        case pushed(size: Int, renewed: Bool)
        /// No mutation is pending.
        case nothingToPush
        case pushFailed(size: Int, SyncFailure)
        case renumbered
        case setAside
        /// The empty push was answered (`nil`) or failed.
        case probed(SyncFailure?)
        case rowsReadBack
        /// A page per asked scope was applied; `more` have further pages.
        /// `sentBack` when a page queued rows a server that lost history
        /// lacks: they are pushed before the sync ends.
        case pulled(asked: [String], more: [String], renewed: Bool, sentBack: Bool = false)
        case pullFailed(asked: [String], SyncFailure, hasCursor: Bool, hasNoticeCursor: Bool)
        case cursorReset
        case tokenRefreshed(Bool)
        case waited
        /// A step other than push and pull failed.
        case failed(SyncFailure)
    }

    private enum Phase: Equatable {
        case identity, schema, pushing, readingBack, pulling, pushingAgain, done
    }

    let settings: Settings
    private let random: () -> Double
    private var phase = Phase.identity
    private var identityChecked: Bool
    /// Transient failures so far in this sync.
    private(set) var failures = 0
    /// Whether a push or a pull went through since the last wait: a server
    /// that then asks for a pause (`Retry-After`) is pacing the sync, not failing it.
    private var progressed = false
    private var refreshed = false
    private var gaps = 0
    private var renewals = 0
    private var limit: Int
    /// Server errors the mutation at the head of the queue met pushed alone.
    private(set) var headFailures = 0
    /// The last of them, as the reason it is set aside.
    private var lastServerError = ""
    /// Where to go on after a wait: the push, narrowed, or the whole cycle again.
    private var resumePush = false
    private var renewed = false
    private var sentBack = false
    private var historyLost = 0
    private var active: [String] = []
    private var oneAtATime = false
    private(set) var refusedScopes: [String] = []

    init(settings: Settings, identityChecked: Bool, random: @escaping () -> Double) {
        self.settings = settings
        self.identityChecked = identityChecked
        self.random = random
        limit = settings.pushBatchSize
    }

    mutating func start() -> Action {
        phase = identityChecked ? .schema : .identity
        return identityChecked ? .refetchGrownTables : .checkIdentity
    }

    mutating func handle(_ event: Event) -> Action {
        switch event {
        case .identityChecked(let renewed, let historyLost, let verifying):
            identityChecked = true
            if verifying > 0 { limit = min(limit, verifying) }
            self.renewed = self.renewed || renewed
            if historyLost {
                phase = .pulling
                active = settings.scopes
                sentBack = true
                return nextPull()
            }
            phase = .schema
            return .refetchGrownTables
        case .tablesRefetched:
            phase = .pushing
            return .push(limit: limit)
        case .pushed(let size, let renewed):
            progressed = true
            gaps = 0
            headFailures = 0
            if renewed {
                self.renewed = true
            } else {
                limit = min(settings.pushBatchSize, limit * 2)
            }
            return .push(limit: limit)
        case .nothingToPush:
            if phase == .pushingAgain {
                phase = .done
                return .finish(refusedScopes: refusedScopes)
            }
            phase = .readingBack
            return .readBackRows
        case .pushFailed(let size, let failure):
            return pushFailed(size: size, failure)
        case .renumbered, .setAside, .cursorReset:
            if event.isSetAside { headFailures = 0 }
            return phase == .pulling ? nextPull() : .push(limit: limit)
        case .probed(nil):
            return .setAside(reason: "\(lastServerError) (failed \(headFailures) times alone while the server answered others)")
        case .probed(let failure?):
            return failed(failure, resumingPush: true)
        case .rowsReadBack:
            if settings.pushOnly, !renewed, !sentBack {
                phase = .done
                return .finish(refusedScopes: refusedScopes)
            }
            phase = .pulling
            active = settings.scopes
            oneAtATime = false
            return nextPull()
        case .pulled(let asked, let more, let renewed, let sentBack):
            progressed = true
            self.renewed = self.renewed || renewed
            self.sentBack = self.sentBack || sentBack
            active = more + active.filter { !asked.contains($0) }
            return nextPull()
        case .pullFailed(let asked, let failure, let hasCursor, let hasNoticeCursor):
            return pullFailed(asked: asked, failure, hasCursor: hasCursor, hasNoticeCursor: hasNoticeCursor)
        case .tokenRefreshed(true):
            return restart()
        case .tokenRefreshed(false):
            return .fail(.unauthorized)
        case .waited:
            if resumePush {
                resumePush = false
                return .push(limit: limit)
            }
            return restart()
        case .failed(let failure):
            return failed(failure, resumingPush: false)
        }
    }

    // MARK: Push

    private mutating func pushFailed(size: Int, _ failure: SyncFailure) -> Action {
        switch failure {
        case .gap(let lastApplied):
            // The server applied nothing past `lastApplied`: number the rest after it.
            gaps += 1
            return gaps <= 3 ? .renumber(after: lastApplied) : .fail(.refused)
        case .clientIDReused(let differing):
            // A second copy of the database syncs beside this one: its edits and these
            // share ids. A new identity keeps these from being dropped as replays.
            renewals += 1
            return renewals <= 2 ? .renewIdentity(appliedThrough: differing - 1) : .fail(.refused)
        case .historyLost:
            // The server lost the history the edits were made on: pull first
            // (each scope's refetch marks what it lacks to go back whole), then push.
            historyLost += 1
            guard historyLost <= 2 else { return .fail(.refused) }
            phase = .pulling
            active = settings.scopes
            oneAtATime = false
            sentBack = true
            return nextPull()
        case .refused(let status, let message) where [400, 403, 413].contains(status):
            // A malformed mutation (400), a scope the user may not write (403)
            // or one too large (413) fails the whole push: narrow down to it.
            guard size > 1 else { return .setAside(reason: "HTTP \(status): \(message)") }
            limit = max(1, size / 2)
            return .push(limit: limit)
        case .serverError(let status, let message):
            guard size > 1 else {
                headFailures += 1
                lastServerError = "HTTP \(status): \(message)"
                if headFailures >= settings.poisonAttempts { return .probe }
                resumePush = true
                return .wait(settings.retry.delay(attempt: headFailures - 1, unit: random()))
            }
            // Try the mutation at the head alone: if it is the one the server
            // fails on, it is found; if not, the batch grows back.
            limit = 1
            return failed(failure, resumingPush: true)
        default:
            return failed(failure, resumingPush: false)
        }
    }

    // MARK: Pull

    private mutating func nextPull() -> Action {
        guard !active.isEmpty else {
            if renewed || sentBack {
                // The database was a restored copy: its edits go out under the
                // new identity now. Or the server lost history: what it lacks goes back.
                renewed = false
                sentBack = false
                phase = .pushingAgain
                return .push(limit: limit)
            }
            phase = .done
            return .finish(refusedScopes: refusedScopes)
        }
        return .pull(oneAtATime ? [active[0]] : active)
    }

    private mutating func pullFailed(asked: [String], _ failure: SyncFailure, hasCursor: Bool, hasNoticeCursor: Bool) -> Action {
        guard case .refused(let status, _) = failure else { return failed(failure, resumingPush: false) }
        // A scope the server refuses fails the whole pull: pull one at a time.
        if asked.count > 1 {
            oneAtATime = true
            return nextPull()
        }
        let scope = asked[0]
        if status == 400, hasCursor {
            // A cursor the server no longer accepts: start the scope over, as after a reset.
            return .resetCursor(scope: scope)
        }
        if status == 400, hasNoticeCursor {
            return .resetNoticeCursor(scope: scope)
        }
        refusedScopes.append(scope)
        active.removeAll { $0 == scope }
        return nextPull()
    }

    // MARK: Failures

    /// A failure that is not the push's or the pull's own business.
    private mutating func failed(_ failure: SyncFailure, resumingPush: Bool) -> Action {
        switch failure {
        case .transient(let retryAfter):
            return backOff(retryAfter: retryAfter, resumingPush: resumingPush)
        case .serverError:
            return backOff(retryAfter: nil, resumingPush: resumingPush)
        case .unauthorized:
            guard !refreshed else { return .fail(.unauthorized) }
            refreshed = true
            return .refreshToken
        case .gap, .clientIDReused, .historyLost, .refused:
            return .fail(.refused)
        case .fatal:
            return .fail(.fatal)
        }
    }

    private mutating func backOff(retryAfter: Duration?, resumingPush: Bool) -> Action {
        resumePush = resumingPush
        // A rate limit (429 with Retry-After) met after requests that went through: wait it out
        // without using up an attempt, so a long drain paced by the server never gives up.
        if let retryAfter, progressed {
            progressed = false
            return .wait(settings.retry.delay(attempt: 0, retryAfter: retryAfter, unit: random()))
        }
        progressed = false
        failures += 1
        if let attempts = settings.attempts, failures >= attempts {
            return .fail(.gaveUp(attempts: failures))
        }
        return .wait(settings.retry.delay(attempt: failures - 1, retryAfter: retryAfter, unit: random()))
    }

    /// The cycle again from its start (after a wait or a new token); the
    /// identity is checked once per engine.
    private mutating func restart() -> Action {
        resumePush = false
        return start()
    }
}

private extension SyncStateMachine.Event {
    var isSetAside: Bool {
        if case .setAside = self { true } else { false }
    }
}
