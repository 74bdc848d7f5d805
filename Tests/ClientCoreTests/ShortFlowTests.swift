import ClientCore
import Foundation
import JoinProtocol
import SpaceModel
import Support
import TestSupport
import Testing
import WordCodes

/// The CLI's short-code flows as client-core functions (`ShortInviteFlow`, `ShortJoinFlow`),
/// driven in this process against real `eleven-relay` and `eleven-server` processes on loopback
/// ports: no `eleven` child process. Both sides run on threads of the test; what each prints is
/// the events it reports.
@Suite(.serialized) struct ShortFlowTests {
    /// A relay, a space server, Paul's space on it, and fresh state directories.
    final class World {
        let directory: URL
        let relay: ChildProcess
        let server: InviteLinkEndToEndTests.RunningServer
        let paul: SpaceSession
        var relayURL: String { "ws://127.0.0.1:\(relay.port)/v1" }

        init() throws {
            directory = try TestSupport.temporaryDirectory()
            let port = try TestSupport.freePort()
            relay = try ChildProcess(
                TestSupport.productPath("eleven-relay"),
                [
                    "--listen", "127.0.0.1:\(port)", "--db",
                    directory.appendingPathComponent("relay.sqlite").path,
                ],
                port: port)
            server = try InviteLinkEndToEndTests.RunningServer()
            paul = try server.paulsSpace()
        }

        func state(_ name: String) -> LocalState {
            LocalState(directory: StateDirectory(path: directory.appendingPathComponent(name).path))
        }

        deinit {
            relay.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Events collected from a flow's thread.
    final class Events<Event: Sendable>: @unchecked Sendable {
        private let events = Locked<[Event]>([])
        func append(_ event: Event) { events.withLock { $0.append(event) } }
        var all: [Event] { events.withLock { $0 } }
        func first<T>(_ pick: (Event) -> T?) -> T? { all.lazy.compactMap(pick).first }
        func wait<T>(timeout: Double = 60, _ pick: (Event) -> T?) -> T? {
            _ = TestSupport.eventually(timeout: timeout) { first(pick) != nil }
            return first(pick)
        }
    }

    /// Runs `body` on a thread of its own; `result` waits for it.
    final class Background<T>: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var outcome: Result<T, Error>?

        private let body: () throws -> T

        init(_ body: @escaping () throws -> T) {
            self.body = body
            Thread.detachNewThread {
                self.outcome = Result { try self.body() }
                self.done.signal()
            }
        }

        func result(timeout: Double) -> Result<T, Error>? {
            guard done.wait(timeout: .now() + timeout) == .success else { return nil }
            return outcome
        }
    }

    static func code(_ events: Events<InviterEvent>) -> Code? {
        events.wait { event -> Code? in
            if case .code(let code, _, _, _, _) = event { return try? Code(parsing: code) }
            return nil
        }
    }

    /// Paul attends a fresh invite on a thread of its own; `events` gets what he hears.
    static func attend(
        _ world: World, ask: InviterAsk?, interruption: Interruption? = nil, events: Events<InviterEvent>
    ) -> Background<(ending: InviteAttendant.Ending?, attendant: InviteAttendant)> {
        Background {
            try ShortInviteFlow.attend(
                session: world.paul, options: ShortInviteOptions(relay: world.relayURL),
                store: PendingInviteStore(directory: world.state("paul").directory), ask: ask,
                interruption: interruption, events: events.append)
        }
    }

    static func join(
        _ world: World, _ code: Code, as name: String, state: LocalState, wait: Int64 = 300,
        interruption: Interruption? = nil, events: Events<ShortJoinEvent>
    ) -> Background<ShortJoinResult> {
        Background {
            let pending = try ShortJoinFlow.begin(
                code: code, relay: world.relayURL, name: name, deviceLabel: "test", wait: wait, state: state)
            return try ShortJoinFlow.run(
                pending, resuming: false, state: state, interruption: interruption, events: events.append)
        }
    }

    static func runError(_ result: Result<ShortJoinResult, Error>?) -> JoinRunError? {
        guard case .failure(let error as ShortJoinError)? = result else { return nil }
        return error.run
    }

    @Test func inviteAndJoinRunInProcess() throws {
        let world = try World()
        let inviter = Events<InviterEvent>()
        let asked = Locked<[String]>([])
        let attending = Self.attend(
            world,
            ask: { name, space, _ in
                asked.withLock { $0.append("\(name) → \(space)") }
                return .yes
            }, events: inviter)
        let code = try #require(Self.code(inviter))
        let joiner = Events<ShortJoinEvent>()
        let sam = world.state("sam")
        let joined = Self.join(world, code, as: "Sam", state: sam, events: joiner).result(timeout: 120)
        guard case .success(.joined(let saved, let threads, let messages))? = joined else {
            Issue.record("the join did not succeed: \(String(describing: joined))")
            return
        }
        #expect(saved.name == "Family" && threads == 1 && messages == 1)
        #expect(try sam.spaces().spaces.map(\.space) == [world.paul.saved.space])
        let ending = try #require(attending.result(timeout: 60)).get()
        #expect(ending.ending == .usedUp)
        #expect(asked.withLock { $0 } == ["Sam → Family"])
        // Both sides showed the same verification words.
        let shown = joiner.first { if case .codeAccepted(let words) = $0 { words } else { nil } }
        let proven = inviter.first { if case .codeProven("Sam", let words) = $0 { words } else { nil } }
        #expect(shown != nil && shown == proven)
        #expect(inviter.all.contains(.joined(name: "Sam", space: "Family")))
        #expect(joiner.all.contains(.waitingForApproval(inviter: "Paul")))
    }

    /// Ctrl-C at "Let Sam join Family? [y/N]": the joiner hears at once that Paul stopped
    /// attending (before: it waited its whole time limit, here five minutes).
    @Test func anInviterInterruptedAtThePromptTellsTheJoiner() throws {
        let world = try World()
        let inviter = Events<InviterEvent>()
        let interruption = Interruption()
        let attending = Self.attend(
            world,
            ask: { _, _, _ in
                interruption.interrupt()  // the person presses Ctrl-C at the question
                return .stopped
            }, interruption: interruption, events: inviter)
        let code = try #require(Self.code(inviter))
        let started = ContinuousClock.now
        let result = Self.join(world, code, as: "Sam", state: world.state("sam"), events: Events())
            .result(timeout: 240)
        let error = try #require(Self.runError(result), "\(String(describing: result))")
        #expect(error == .refused(reason: "left", message: "Paul stopped attending this invite."))
        #expect(ContinuousClock.now - started < .seconds(120), "told at once, not at the 300 s limit")
        let ending = try #require(attending.result(timeout: 60)).get()
        #expect(ending.ending == .cancelled)
    }

    /// Ctrl-C while nobody has joined yet: the invite ends, and a joiner who comes later hears
    /// that the inviter left instead of waiting for an answer that never comes.
    @Test func anInviterInterruptedWhileWaitingLeavesANotice() throws {
        let world = try World()
        let inviter = Events<InviterEvent>()
        let interruption = Interruption()
        let attending = Self.attend(world, ask: nil, interruption: interruption, events: inviter)
        let code = try #require(Self.code(inviter))
        interruption.interrupt()
        let ending = try #require(attending.result(timeout: 60)).get()
        #expect(ending.ending == .cancelled)
        let result = Self.join(world, code, as: "Sam", state: world.state("sam"), events: Events())
            .result(timeout: 240)
        #expect(Self.runError(result) == .failed(.inviteEnded(.left)), "\(String(describing: result))")
    }

    /// Ctrl-C on the joiner's side while Paul is asked: Paul's question notices the joiner left,
    /// the use is not spent, and the invite goes on attending.
    @Test func anInterruptedJoinerTellsTheAttendant() throws {
        let world = try World()
        let inviter = Events<InviterEvent>()
        let paulStops = Interruption()
        let attending = Self.attend(
            world,
            ask: { _, _, joinerWaiting in
                // A person who does not answer: only the joiner's leaving ends the question.
                _ = TestSupport.eventually(timeout: 200) { !joinerWaiting() }
                return .no
            }, interruption: paulStops, events: inviter)
        let code = try #require(Self.code(inviter))
        let joiner = Events<ShortJoinEvent>()
        let samStops = Interruption()
        let joining = Self.join(
            world, code, as: "Sam", state: world.state("sam"), interruption: samStops, events: joiner)
        _ = joiner.wait { if case .waitingForApproval = $0 { true } else { nil } }
        samStops.interrupt()
        #expect(Self.runError(joining.result(timeout: 60)) == .interrupted)
        #expect(inviter.wait(timeout: 120) { $0 == .joinerLeft(name: "Sam") ? true : nil } == true)
        #expect(!inviter.all.contains(.declined(name: "Sam")), "the use was not spent on someone who left")
        // Still attending: Ann joins with the same code.
        let ann = Self.join(world, code, as: "Ann", state: world.state("ann"), events: Events())
        paulStops.interrupt()
        let annResult = ann.result(timeout: 120)
        #expect(
            Self.runError(annResult)
                == .refused(reason: "left", message: "Paul stopped attending this invite.")
                || Self.runError(annResult) == .failed(.inviteEnded(.left)),
            "\(String(describing: annResult))")
        _ = try #require(attending.result(timeout: 60)).get()
    }

    /// `eleven approve` attends every pending invite at once: the joiner of the second invite is
    /// let in while nobody uses the first (before: it waited for the first invite's time limit).
    @Test func approveAttendsEveryPendingInviteAtOnce() throws {
        let world = try World()
        let store = PendingInviteStore(directory: world.state("paul").directory)
        var codes: [Code] = []
        for _ in 0..<2 {
            let events = Events<InviterEvent>()
            let detached = try ShortInviteFlow.attend(
                session: world.paul, options: ShortInviteOptions(relay: world.relayURL, detach: true),
                store: store, ask: nil, events: events.append)
            #expect(detached.ending == nil)
            codes.append(try #require(Self.code(events)))
        }
        let pending = try store.load()
        #expect(pending.count == 2)
        let inviter = Events<InviterEvent>()
        let stop = Interruption()
        let approving = Background {
            try ShortInviteFlow.approve(
                pending.map { ($0, world.paul) }, store: store, until: .now + .seconds(200), ask: nil,
                interruption: stop, events: inviter.append)
        }
        let joined = Self.join(
            world, codes[1], as: "Sam", state: world.state("sam"), wait: 100, events: Events()
        )
        .result(timeout: 180)
        guard case .success(.joined)? = joined else {
            Issue.record("the second invite's joiner was not let in: \(String(describing: joined))")
            stop.interrupt()
            _ = approving.result(timeout: 60)
            return
        }
        stop.interrupt()
        #expect(try #require(approving.result(timeout: 60)).get() == false)
        #expect(inviter.all.contains(.joined(name: "Sam", space: "Family")))
        // The first invite is still pending for a later `eleven approve`.
        #expect(try store.load().map(\.code) == [pending[0].code])
    }
}
