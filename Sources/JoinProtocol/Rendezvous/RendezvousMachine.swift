import Mailbox

/// What went wrong between a client and the relay.
public enum RendezvousError: Error, Equatable, Sendable, Codable, CustomStringConvertible {
    /// The relay sent something the protocol does not allow.
    case protocolViolation(String)
    /// A resumed claim found the nameplate pointing at another mailbox: the one this side had
    /// was closed while it was away (an attendant killed as its joiner spoke).
    case nameplateMoved
    /// A third party is using this code's mailbox.
    case crowded
    /// The relay refused to serve us (its welcome carried an error).
    case unwelcome(String)
    /// The relay answered a command with an error.
    case server(String)
    /// The application used a phase twice or sent after closing.
    case misuse(String)

    /// A stable machine-readable code.
    public var code: String {
        switch self {
        case .protocolViolation, .nameplateMoved: return "relay_protocol"
        case .crowded: return "crowded"
        case .unwelcome: return "relay_unwelcome"
        case .server: return "relay_error"
        case .misuse: return "misuse"
        }
    }

    public var description: String {
        switch self {
        case .protocolViolation(let why): return "The relay misbehaved: \(why)."
        case .nameplateMoved: return "The relay misbehaved: the nameplate now points at another mailbox."
        case .crowded:
            return "Someone else is already using this code. Ask for a new one."
        case .unwelcome(let why): return "The relay refused the connection: \(why)"
        case .server(let why): return "The relay reported an error: \(why)"
        case .misuse(let why): return "Internal error: \(why)"
        }
    }
}

/// What the connection owner must do after feeding an event to a `RendezvousMachine`.
public enum RendezvousAction: Equatable, Sendable {
    /// Send this command on the current connection.
    case send(ClientMessage)
    /// Send this `add` on the current connection asking the relay for no copy back
    /// (``ClientMessage/echoKey``; a relay that does not know the key echoes it anyway).
    case sendWithoutEcho(ClientMessage)
    /// The relay allocated our nameplate.
    case allocated(Rendezvous.Nameplate)
    /// The peer's message for a phase, delivered once however often the relay repeats it.
    case received(phase: Rendezvous.Phase, body: [UInt8])
    /// The relay's message of the day.
    case motd(String)
    /// A failure that ends this rendezvous.
    case failed(RendezvousError)
    /// The relay confirmed our close: nothing more will happen.
    case closed
}

/// The client side of the mailbox protocol as a pure state machine: nameplate (allocate or
/// claim, release on the first peer message), mailbox (open, add, close), outbound messages kept
/// until the relay is known to have stored them, inbound messages de-duplicated by phase.
///
/// A message is known stored when the relay echoes it, or replays it on an `open`. A message
/// sent without an echo (``send(phase:body:echo:)``) is one the peer's answer proves stored:
/// the machine keeps it until a replay shows it (each reconnect sends it again, and the peer
/// takes each phase once) and does not wait for it. The order of the relay's other replies is
/// no receipt: a hostile path may hold an `add` back behind the commands that follow it.
///
/// It never touches a socket. The owner calls `connected()` for every new connection (the first
/// and each reconnect, always with the same side), feeds every `ServerMessage`, and performs the
/// returned actions. The whole machine is `Codable`, so a pending join survives a process restart:
/// restore it and call `connected()` again.
public struct RendezvousMachine: Codable, Sendable {
    /// How this side finds its mailbox.
    public enum Start: Codable, Sendable, Equatable {
        /// Ask the relay for a fresh nameplate (the side that mints the code).
        case allocate
        /// Claim a nameplate from a code the person typed.
        case claim(Rendezvous.Nameplate)
    }

    public let appID: String
    public let side: Rendezvous.Side
    public let clientVersion: [String]

    public private(set) var nameplate: Rendezvous.Nameplate?
    public private(set) var mailbox: Rendezvous.MailboxID?
    public private(set) var peerSide: Rendezvous.Side?
    private var wantsAllocation: Bool
    private var releaseRequested = false
    private var nameplateReleased = false
    private var closeMood: Rendezvous.Mood?
    public private(set) var isClosed = false
    public private(set) var failure: RendezvousError?
    /// Outbound messages not known to be stored yet, in the order they were sent.
    private var unechoed: [Outbound] = []
    /// The phases sent asking for no echo. Not saved: a restored machine sends what is left of
    /// them with an echo, the receipt a later connection may not otherwise get.
    private var withoutEcho: Set<Rendezvous.Phase> = []
    private var usedPhases: Set<Rendezvous.Phase> = []
    private var seenPeerPhases: Set<Rendezvous.Phase> = []
    /// What was sent on the current connection (the relay allows each command once per connection).
    private var link = Link()

    private struct Outbound: Codable, Sendable, Equatable {
        let phase: Rendezvous.Phase
        let body: [UInt8]
    }

    private struct Link: Sendable {
        var isUp = false
        var allocateSent = false
        var claimSent = false
        var openSent = false
        var releaseSent = false
        var closeSent = false
        var addsSent: Set<Rendezvous.Phase> = []
    }

    private enum CodingKeys: String, CodingKey {
        case appID, side, clientVersion, nameplate, mailbox, peerSide, wantsAllocation
        case releaseRequested, nameplateReleased, closeMood, isClosed, failure, unechoed, usedPhases
        case seenPeerPhases
    }

    public init(
        appID: String, side: Rendezvous.Side, start: Start, clientVersion: [String] = ["eleven", "1"]
    ) {
        self.appID = appID
        self.side = side
        self.clientVersion = clientVersion
        switch start {
        case .allocate:
            wantsAllocation = true
        case .claim(let nameplate):
            wantsAllocation = false
            self.nameplate = nameplate
        }
    }

    /// Whether every message we sent asking for its echo has been stored by the relay.
    public var allEchoed: Bool { unechoed.allSatisfy { withoutEcho.contains($0.phase) } }

    /// This machine as saved by a side that must hear the peer again from the start after a
    /// restart (an attendant re-deriving its key agreement, as the bot does): no peer phase
    /// counts as seen, so reopening the mailbox delivers everything again. Once the peer has
    /// spoken the nameplate counts as released (both sides let it go on the first message), so
    /// resuming opens the mailbox without claiming a nameplate that may be gone; before that
    /// the claim stands and is resumed as it is.
    public func replayingPeer() -> RendezvousMachine {
        var copy = self
        if nameplate != nil && (!seenPeerPhases.isEmpty || releaseRequested) {
            copy.releaseRequested = true
            copy.nameplateReleased = true
        }
        copy.seenPeerPhases = []
        return copy
    }

    // MARK: Events

    /// A new connection to the relay is open: bind and resume whatever was in flight.
    public mutating func connected() -> [RendezvousAction] {
        link = Link()
        link.isUp = true
        guard !isClosed, failure == nil else { return [] }
        return [.send(.bind(appID: AppID(appID), side: side, clientVersion: clientVersion))] + pump()
    }

    /// The connection was lost. The owner reconnects (with back-off) and calls `connected()`.
    public mutating func disconnected() {
        link = Link()
    }

    /// Queues a message for the peer. Each phase may be used once. `echo` false asks the relay
    /// for no copy back (``ClientMessage/echoKey``): for a message the peer answers, whose
    /// answer is its receipt (``allEchoed`` does not count it).
    public mutating func send(phase: Rendezvous.Phase, body: [UInt8], echo: Bool = true)
        throws(RendezvousError)
        -> [RendezvousAction]
    {
        guard closeMood == nil, !isClosed else { throw .misuse("sending after close") }
        guard !usedPhases.contains(phase) else { throw .misuse("phase '\(phase)' used twice") }
        usedPhases.insert(phase)
        if !echo { withoutEcho.insert(phase) }
        unechoed.append(Outbound(phase: phase, body: body))
        return pump()
    }

    /// Closes the mailbox with a mood (releasing the nameplate too if we still hold it).
    public mutating func close(mood: Rendezvous.Mood) -> [RendezvousAction] {
        guard closeMood == nil, !isClosed else { return [] }
        closeMood = mood
        if nameplate != nil && !nameplateReleased { releaseRequested = true }
        if mailbox == nil {
            // Nothing was ever opened: there is nothing for the relay to close.
            if nameplate == nil || nameplateReleased {
                isClosed = true
                return [.closed]
            }
        }
        return pump()
    }

    /// A message from the relay on the current connection.
    public mutating func received(_ message: ServerMessage) -> [RendezvousAction] {
        guard !isClosed else { return [] }
        switch message {
        case .welcome(let welcome):
            if let error = welcome.error { return fail(.unwelcome(error)) }
            return welcome.motd.map { [.motd($0)] } ?? []
        case .ack, .pong, .unknown:
            return []
        case .nameplates:
            return []
        case .allocated(let allocated):
            guard wantsAllocation, nameplate == nil else {
                return fail(.protocolViolation("an allocation we did not ask for"))
            }
            wantsAllocation = false
            nameplate = allocated
            return [.allocated(allocated)] + pump()
        case .claimed(let claimed):
            if let mailbox, mailbox != claimed {
                return fail(.nameplateMoved)
            }
            mailbox = claimed
            return pump()
        case .released:
            nameplateReleased = true
            return finishCloseIfDone()
        case .closed:
            isClosed = true
            return [.closed]
        case .message(let message):
            guard let body = Hex.decode(message.body) else {
                return fail(.protocolViolation("a mailbox message body is not hex"))
            }
            let (from, phase) = (message.side, message.phase)
            if from == side {
                unechoed.removeAll { $0.phase == phase }
                return []
            }
            if let peerSide, peerSide != from {
                // A third side in our mailbox: the relay will call it crowded; ignore its words.
                return []
            }
            peerSide = from
            guard !seenPeerPhases.contains(phase) else { return [] }
            seenPeerPhases.insert(phase)
            var actions: [RendezvousAction] = [.received(phase: phase, body: body)]
            if nameplate != nil && !releaseRequested {
                releaseRequested = true
                actions += pump()
            }
            return actions
        case .error(let error, _):
            if error.code == .crowded { return fail(.crowded) }
            return fail(.server(error.message))
        }
    }

    // MARK: Internals

    private mutating func fail(_ error: RendezvousError) -> [RendezvousAction] {
        failure = error
        return [.failed(error)]
    }

    private mutating func finishCloseIfDone() -> [RendezvousAction] {
        if closeMood != nil && mailbox == nil && !isClosed {
            isClosed = true
            return [.closed]
        }
        return []
    }

    /// Sends whatever the state calls for and this connection has not carried yet.
    private mutating func pump() -> [RendezvousAction] {
        guard link.isUp, !isClosed, failure == nil else { return [] }
        var out: [RendezvousAction] = []
        if wantsAllocation && nameplate == nil && !link.allocateSent {
            link.allocateSent = true
            out.append(.send(.allocate))
        }
        if let nameplate, !releaseRequested, !link.claimSent {
            link.claimSent = true
            out.append(.send(.claim(nameplate)))
        }
        if let mailbox {
            // After a reconnect, reopen even when closing if messages still await their echo:
            // the relay only takes an `add` on a connection that opened the mailbox.
            if !link.openSent && (closeMood == nil || !unechoed.isEmpty) {
                link.openSent = true
                out.append(.send(.open(mailbox)))
            }
            if link.openSent {
                for message in unechoed where !link.addsSent.contains(message.phase) {
                    link.addsSent.insert(message.phase)
                    let add = ClientMessage.add(phase: message.phase, body: Hex.encode(message.body))
                    out.append(withoutEcho.contains(message.phase) ? .sendWithoutEcho(add) : .send(add))
                }
            }
        }
        if releaseRequested && !nameplateReleased && !link.releaseSent, let nameplate {
            link.releaseSent = true
            out.append(.send(.release(nameplate)))
        }
        if let mood = closeMood, let mailbox, !link.closeSent {
            link.closeSent = true
            out.append(.send(.close(mailbox: mailbox, mood: mood.rawValue)))
        }
        return out
    }
}

extension RendezvousMachine: Equatable {
    /// Equal when everything that is saved is equal (the current connection's bookkeeping and
    /// the phases sent without an echo are not saved and not compared).
    public static func == (a: RendezvousMachine, b: RendezvousMachine) -> Bool {
        a.appID == b.appID && a.side == b.side && a.clientVersion == b.clientVersion
            && a.nameplate == b.nameplate && a.mailbox == b.mailbox && a.peerSide == b.peerSide
            && a.wantsAllocation == b.wantsAllocation && a.releaseRequested == b.releaseRequested
            && a.nameplateReleased == b.nameplateReleased && a.closeMood == b.closeMood
            && a.isClosed == b.isClosed && a.failure == b.failure && a.unechoed == b.unechoed
            && a.usedPhases == b.usedPhases && a.seenPeerPhases == b.seenPeerPhases
    }
}

extension RendezvousMachine {
    /// The machine as its synthesized `Codable` writes it (``StateJSONWriter``): the bot saves it
    /// inside the invite at every step of a join.
    public func writeJSON(into out: inout StateJSONWriter) {
        out.object { out in
            out.string("appID", appID)
            out.wrapped("side", side.value)
            out.array("clientVersion") { out in
                for part in clientVersion {
                    out.element()
                    out.string(part)
                }
            }
            if let nameplate { out.wrapped("nameplate", nameplate.value) }
            if let mailbox { out.wrapped("mailbox", mailbox.value) }
            if let peerSide { out.wrapped("peerSide", peerSide.value) }
            out.bool("wantsAllocation", wantsAllocation)
            out.bool("releaseRequested", releaseRequested)
            out.bool("nameplateReleased", nameplateReleased)
            if let closeMood { out.string("closeMood", closeMood.rawValue) }
            out.bool("isClosed", isClosed)
            if let failure { out.object("failure") { failure.writeJSON(into: &$0) } }
            out.array("unechoed") { out in
                for message in unechoed {
                    out.element()
                    out.object { out in
                        out.wrapped("phase", message.phase.value)
                        out.array("body") { out in
                            for byte in message.body {
                                out.element()
                                out.integer(byte)
                            }
                        }
                    }
                }
            }
            Self.writePhases("usedPhases", usedPhases, into: &out)
            Self.writePhases("seenPeerPhases", seenPeerPhases, into: &out)
        }
    }

    private static func writePhases(
        _ key: String, _ phases: Set<Rendezvous.Phase>, into out: inout StateJSONWriter
    ) {
        out.array(key) { out in
            for phase in phases {
                out.element()
                out.wrapped(phase.value)
            }
        }
    }
}

extension RendezvousError {
    /// The members of the synthesized `Codable` form (`{"crowded":{}}`, `{"server":{"_0":"…"}}`).
    func writeJSON(into out: inout StateJSONWriter) {
        switch self {
        case .protocolViolation(let why): out.object("protocolViolation") { $0.string("_0", why) }
        case .nameplateMoved: out.object("nameplateMoved") { _ in }
        case .crowded: out.object("crowded") { _ in }
        case .unwelcome(let why): out.object("unwelcome") { $0.string("_0", why) }
        case .server(let why): out.object("server") { $0.string("_0", why) }
        case .misuse(let why): out.object("misuse") { $0.string("_0", why) }
        }
    }
}
