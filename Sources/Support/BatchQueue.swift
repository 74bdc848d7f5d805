import Foundation

/// Group handling for work that goes one batch at a time (a database commit, a chain that takes
/// one request at a time): callers who arrive while a batch is being handled wait, and the first
/// of them then handles everyone who waited, in arrival order, in one go. Each caller is
/// answered as soon as its own batch is done, not after later ones. Whoever leads a batch runs
/// the `handle` it passed, on its own thread: every caller passes the same work.
public final class BatchQueue<Item, Answer>: @unchecked Sendable {
    /// Most items in one batch; more wait for the next.
    public let maximumBatch: Int

    public init(maximumBatch: Int = .max) {
        precondition(maximumBatch >= 1)
        self.maximumBatch = maximumBatch
    }

    /// Adds `item` to the next batch and returns its answer. `handle` gets a batch in arrival
    /// order and returns one answer per item, in the same order.
    public func submit(_ item: Item, handle: ([Item]) -> [Answer]) -> Answer {
        let own = Ticket(item)
        let leads = state.withLock { state in
            state.waiting.append(own)
            if state.leading { return false }
            state.leading = true
            return true
        }
        if !leads {
            own.done.wait()
            // Answered by a leader, or made the next one.
            if let answer = own.answer { return answer }
        }
        let batch = state.withLock { state in
            let taken = Array(state.waiting.prefix(maximumBatch))
            state.waiting.removeFirst(taken.count)
            return taken
        }
        // A closure, not `\.item`: a key path into this generic class is built anew at every
        // call (`swift_getKeyPath`, 1.6% of the space server's CPU).
        let answers = handle(batch.map { $0.item })
        precondition(answers.count == batch.count, "one answer per item")
        // Whoever queued meanwhile is the next batch: its first caller leads it.
        state.withLock { state in
            if let next = state.waiting.first {
                next.done.signal()
            } else {
                state.leading = false
            }
        }
        var mine: Answer?
        for (ticket, answer) in zip(batch, answers) {
            if ticket === own {
                mine = answer
            } else {
                ticket.answer = answer
                ticket.done.signal()
            }
        }
        return mine!
    }

    /// An item and its answer, written before `done` is signalled; signalled without an
    /// answer, its caller leads the next batch.
    private final class Ticket: @unchecked Sendable {
        let item: Item
        var answer: Answer?
        let done = DispatchSemaphore(value: 0)

        init(_ item: Item) {
            self.item = item
        }
    }

    /// The callers waiting for the next batch, and whether a batch is being handled.
    private struct State {
        var waiting: [Ticket] = []
        var leading = false
    }

    private let state = Locked(State())
}
