import JoinProtocol
import Mailbox

extension ServerMessage {
    /// A relay's `message` carrying `body` from `side`, as the machine's tests feed it (the
    /// relay's receive time and the `add`'s id do not matter to a client).
    static func message(side: Side, phase: Phase, body: [UInt8]) -> ServerMessage {
        .message(
            StoredMessage(
                side: side, phase: phase, body: Hex.encode(body), serverRX: RelayInstant(secondsSince1970: 1),
                messageID: .null))
    }
}
