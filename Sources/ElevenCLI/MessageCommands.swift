import CLISupport
import ClientCore
import Foundation
import SpaceModel
import Support

/// `eleven thread create`, `eleven threads`, `eleven send`, `eleven read`.
let messageCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "thread", "create"], summary: "Start a thread for the space's current members.",
            options: [CommonOptions.space, CommonOptions.json],
            positionals: [
                PositionalSpec("NAME", help: "the thread's name (encrypted; the server never sees it)")
            ])
    ) { arguments in
        let name = arguments.positional(0) ?? ""
        guard !name.isEmpty else { throw CLIError.usage("the thread needs a name", help: nil) }
        let session = try openSpace(arguments)
        let thread = try withSpaceErrors { try session.createThread(named: name) }
        if arguments.flag("json") {
            Terminal.json(["thread": thread.base64URL, "name": name, "space": session.saved.space.base64URL])
            return
        }
        Terminal.out("Started thread \"\(name)\" in \(session.saved.shownName).")
    },
    .init(
        CommandSpec(
            ["eleven", "threads"], summary: "List a space's threads.",
            options: [CommonOptions.space, CommonOptions.json])
    ) { arguments in
        let session = try openSpace(arguments)
        let threads = try withSpaceErrors { () throws -> [SpaceThread] in
            let roster = try session.roster()
            // A thread continued under a new key is listed once, as its successor.
            return SpaceSession.current(
                try session.threads(roster: roster, keys: session.threadKeys(roster: roster)))
        }
        if arguments.flag("json") {
            Terminal.json([
                "threads": threads.map {
                    ["thread": $0.id.base64URL, "name": $0.name ?? NSNull(), "readable": $0.isReadable]
                        as [String: Any]
                }
            ])
            return
        }
        for thread in threads {
            Terminal.out(
                thread.name.map { "  \(SafeText.line($0))" }
                    ?? "  (a thread you were not given the key to)  \(thread.id)")
        }
    },
    .init(
        CommandSpec(
            ["eleven", "read"], summary: "Read a thread's messages.",
            options: [
                CommonOptions.space, CommonOptions.thread,
                OptionSpec("follow", short: "f", help: "keep waiting for new messages (Ctrl-C stops)"),
                CommonOptions.json,
            ],
            discussion: "With --json, each message is one JSON object per line.")
    ) { arguments in
        let session = try openSpace(arguments)
        let json = arguments.flag("json")
        // An expired link of this device's keeps no right to add anyone.
        _ = try? session.retireStaleInviteSigners()
        try withSpaceErrors {
            var (roster, keys, thread) = try session.open(thread: arguments.value("thread"))
            var cursor: Int64 = 0
            var first = true
            var reconnect = FollowReconnect()
            // What was written before the thread continued under a new key comes first.
            var earlier: [ReadMessage] = []
            for previous in try session.earlierThreads(of: thread, roster: roster, keys: keys) {
                earlier += try session.read(previous.id, roster: roster, keys: keys).messages
            }
            repeat {
                let wait = first ? 0 : 25
                var page: (messages: [ReadMessage], next: Int64, rejected: Int)
                do {
                    page = try session.read(thread.id, since: cursor, wait: wait, roster: roster, keys: keys)
                    reconnect.succeeded()
                } catch let error as SpaceClientError where !first && FollowReconnect.isPassing(error) {
                    // Following: a server that restarts or drops the long poll is waited for.
                    reconnect.failed(error)
                    continue
                }
                if page.rejected > 0 {
                    // Someone may have joined since the member list was read: refresh, read again.
                    roster = try session.roster()
                    keys = try session.threadKeys(roster: roster)
                    page = try session.read(thread.id, since: cursor, roster: roster, keys: keys)
                    if page.rejected > 0 {
                        Terminal.err("(\(page.rejected) message(s) could not be verified and were skipped)")
                    }
                }
                if first && !json {
                    for note in SpaceSession.newIdentityNotes(roster) { Terminal.out("(\(note).)") }
                }
                let names = MemberNames(roster)
                for message in earlier + page.messages {
                    if json {
                        Terminal.json([
                            "cursor": message.cursor, "id": message.id.base64URL,
                            "author": message.author.base64URL, "authorName": message.authorName,
                            "text": message.text,
                        ])
                    } else {
                        Terminal.out(SafeText.body(message.text, after: "\(names.label(message.author)): "))
                    }
                }
                if first && !json && earlier.isEmpty && page.messages.isEmpty && !arguments.flag("follow") {
                    Terminal.out("No messages in \(thread.name.map(SafeText.line) ?? "this thread") yet.")
                }
                cursor = page.next
                first = false
                earlier = []
            } while arguments.flag("follow")
        }
    },
]

/// `eleven read -f` across a server that restarts or a network that drops: says so once, waits
/// with back-off (0.5 s growing to 10 s), tries again, and says when it is back.
struct FollowReconnect {
    private var backoff = Backoff(first: 0.5, cap: 10)
    private var lost = false

    /// Failures worth waiting out: the server unreachable, or an answer cut off.
    static func isPassing(_ error: SpaceClientError) -> Bool {
        error.kind == .unreachable || error.kind == .invalidResponse || (error.status ?? 0) >= 500
    }

    mutating func failed(_ error: SpaceClientError) {
        if !lost {
            Terminal.err("Lost the connection to the server (\(error.message)); reconnecting…")
        }
        lost = true
        Thread.sleep(forTimeInterval: backoff.delay)
        backoff.grow()
    }

    mutating func succeeded() {
        guard lost else { return }
        lost = false
        backoff.reset()
        Terminal.err("Reconnected.")
    }
}

/// The options of `eleven send TEXT` (a message to a space thread).
let spaceSendOptions: [OptionSpec] = [CommonOptions.space, CommonOptions.thread]

/// `eleven send TEXT…`: an end-to-end encrypted message to a thread of a saved space.
func runSpaceSend(_ arguments: ParsedArguments) throws {
    let text = arguments.positionals.joined(separator: " ")
    guard !text.isEmpty else { throw CLIError.usage("nothing to send: give the message text", help: nil) }
    let session = try openSpace(arguments)
    let (thread, cursor) = try withSpaceErrors { () throws -> (SpaceThread, Int64) in
        let (_, keys, thread) = try session.openForSending(thread: arguments.value("thread"))
        return (thread, try session.send(text, to: thread.id, keys: keys))
    }
    if arguments.flag("json") {
        Terminal.json(["thread": thread.id.base64URL, "cursor": cursor])
        return
    }
    Terminal.out(
        "Sent to \(thread.name.map(SafeText.line) ?? "the thread") in \(SafeText.line(session.saved.name)).")
}
