import Foundation
import JoinProtocol
import PAKE
import SpaceModel
import Support
import WordCodes

// `eleven join CODE` and `eleven join --resume` as functions: the join runs over the relay
// (``JoinRunner``), saved at every step so a stopped process can finish it, and the grant is
// opened and the space saved. Progress comes out as ``ShortJoinEvent``s; the CLI only prints.

/// What a joiner's device says while it joins with a short code.
public enum ShortJoinEvent: Equatable, Sendable {
    case resuming
    case connecting
    case reconnecting
    /// The code is proven; `verification`: the words the inviter should see too.
    case codeAccepted(verification: String)
    /// A person decides; `inviter` as the attendant named them (unsafe to print as is).
    case waitingForApproval(inviter: String?)
}

/// How a short-code join ended well.
public enum ShortJoinResult: Sendable {
    /// In: the space is saved; the history hint says what there is to read.
    case joined(SavedSpace, threads: Int, messages: Int)
    /// This device is in that space already; nothing changed (the attendant's words).
    case alreadyJoined(message: String)
}

/// A join that stopped in the run: `codeAccepted` says whether the code had been proven by then
/// (a time-out is then the inviter's silence, not an unknown code).
public struct ShortJoinError: Error, Equatable, Sendable {
    public let run: JoinRunError
    public let codeAccepted: Bool
}

public enum ShortJoinFlow {
    /// A fresh join with `code` through `relay`: the request carries `name` and this device's
    /// keys (made now if it has none). Not saved until ``run(_:resuming:state:interruption:events:)``
    /// takes its first step.
    public static func begin(
        code: Code, relay: String, name: String, deviceLabel: String, wait: Int64, state: LocalState,
        now: Int64 = Int64(Date().timeIntervalSince1970)
    ) throws(LocalStateError) -> PendingJoin {
        let (identity, _) = try state.identity(create: true)
        // Earlier attempts that never checked out travel inside this join's confirmed channel,
        // so the attendant (and through it the inviter) hears of them.
        let request = JoinRequest(
            displayName: String(name.prefix(64)), deviceLabel: String(deviceLabel.prefix(64)),
            publicKeys: JoinerKeys(identity.publicKeys),
            failedAttempts: try FailedJoinAttemptStore(directory: state.directory).reports(),
            grantVersion: JoinGrant.acceptedVersions.upperBound)
        var random = SystemRandom()
        return PendingJoin(
            relay: relay, nameplate: code.nameplate,
            words: code.secretWords, request: request, createdAt: now, deadline: now + wait, using: &random)
    }

    /// After joining `session`'s space another way (a full-length link): the failed attempts
    /// this device has not told anyone go to the space's attendant (its bot), sealed to it and
    /// signed by this member, each forgotten once the space server took it. Without a bot there
    /// is nobody to tell here; they wait for the next short-code join. Returns how many went.
    @discardableResult
    public static func reportFailedAttempts(_ session: SpaceSession, state: LocalState) -> Int {
        let attempts = FailedJoinAttemptStore(directory: state.directory)
        guard let pending = try? attempts.load().filter({ $0.report != nil }), !pending.isEmpty,
            let attendant = try? session.roster().attendant
        else { return 0 }
        var sent = 0
        for attempt in pending.suffix(JoinAttemptReport.maxPerRequest) {
            guard let report = attempt.report,
                (try? session.send(.attemptReport(id: attempt.id, report), to: attendant)) != nil
            else { continue }
            try? attempts.update { $0.removeAll { $0.id == attempt.id } }
            sent += 1
        }
        return sent
    }

    /// The attendant answered the request that carried the earlier attempts (a grant, or that
    /// this device is a member already): it read them.
    private static func forgetReported(_ pending: PendingJoin, _ attempts: FailedJoinAttemptStore) {
        try? attempts.update { all in
            all.removeAll { attempt in pending.request.failedAttempts.contains { $0.side == attempt.side } }
        }
    }

    /// The last join whose process was stopped, if any (`eleven join --resume`).
    public static func interrupted(state: LocalState) throws(LocalStateError) -> PendingJoin? {
        try PendingJoinStore(directory: state.directory).load().last
    }

    /// Runs `pending` to its end and saves the space it grants. `resuming`: a join saved by an
    /// earlier process (the attendant's first message was seen then). Interrupted, the attendant
    /// is told the joiner left and ``ShortJoinError`` carries `.interrupted`; the saved join is
    /// removed whatever the ending (only a killed process leaves it to resume).
    public static func run(
        _ pending: PendingJoin, resuming: Bool, state: LocalState, interruption: Interruption? = nil,
        now: Int64 = Int64(Date().timeIntervalSince1970), events: @escaping (ShortJoinEvent) -> Void
    ) throws -> ShortJoinResult {
        if resuming { events(.resuming) }
        let joins = PendingJoinStore(directory: state.directory)
        let attempts = FailedJoinAttemptStore(directory: state.directory)
        let (identity, _) = try state.identity(create: true)
        let wait = max(1, pending.deadline - now)
        let accepted = Locked(false)
        // One "reconnecting" until the join moves on: the interruptible waits retry every quarter
        // second, and each retry reports.
        let reconnecting = Locked(false)
        let grantBytes: [UInt8]
        do {
            grantBytes = try JoinRunner.join(
                pending, timeout: .seconds(wait),
                // An attendant leaves its first message before anyone joins: without it, nobody
                // attends the code.
                firstAnswer: resuming ? nil : .seconds(min(wait, 15)),
                progress: { progress in
                    let wasReconnecting = reconnecting.withLock { now in
                        defer { now = progress == .reconnecting }
                        return now
                    }
                    switch progress {
                    case .connecting: events(.connecting)
                    case .reconnecting: if !wasReconnecting { events(.reconnecting) }
                    case .codeAccepted(let sas):
                        accepted.withLock { $0 = true }
                        events(
                            .codeAccepted(
                                verification: VerificationWords.words(for: sas).joined(separator: " ")))
                    case .waitingForApproval(let inviter):
                        events(.waitingForApproval(inviter: inviter))
                    case .codeSent:
                        break  // recorded by `recordAttempt` below
                    case .codeProven:
                        try? attempts.update { $0.removeAll { $0.id == pending.id } }
                    }
                },
                // Saved at every step (sealed), so `eleven join --resume` carries on after a kill.
                save: { try? joins.put($0) }, interruption: interruption,
                // Before the confirmation goes out: a relay posing as the attendant tests its
                // guess on it and may never let the attendant hear of it. Not recorded, not sent.
                recordAttempt: {
                    (try? attempts.update { all in
                        // Once per join, also when a resumed join sends it after all.
                        all.removeAll { $0.id == pending.id }
                        all.append(FailedJoinAttempt(pending, at: Int64(Date().timeIntervalSince1970)))
                    }) != nil
                })
        } catch .refused(let reason, let message) where RefusalReason(rawValue: reason) == .alreadyMember {
            // As with a link: a space this device is in already is left as it is.
            try? joins.remove(pending.id)
            forgetReported(pending, attempts)
            return .alreadyJoined(message: message)
        } catch {
            try? joins.remove(pending.id)
            // An attempt whose code went out and never checked out is kept, with how it ended,
            // for the next attendant.
            try? attempts.update { all in
                for index in all.indices where all[index].id == pending.id { all[index].outcome = error.code }
            }
            throw ShortJoinError(run: error, codeAccepted: accepted.withLock { $0 })
        }
        try? joins.remove(pending.id)
        let grant = try JoinGrant(decoding: grantBytes)
        let result = try grant.accept(
            identity: identity, state: state, deviceLabel: pending.request.deviceLabel,
            now: Int64(Date().timeIntervalSince1970), nameplate: pending.nameplate.value)
        forgetReported(pending, attempts)
        return .joined(result.saved, threads: grant.historyHint.threads, messages: grant.historyHint.messages)
    }
}
