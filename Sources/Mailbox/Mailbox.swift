/// The Magic Wormhole mailbox protocol v1's shared vocabulary (`wormhole-protocol.md`), each
/// part defined once for the relay (`Relay`) and the clients (`JoinProtocol`, `ClientCore`,
/// `WordCodes`):
///
/// - the identifiers (``AppID``, ``Side``, ``Nameplate``, ``MailboxID``, ``Phase``, ``Mood``,
///   ``ClientAddress``, ``RelayInstant``);
/// - the messages, each encoding and decoding (`Messages/`): ``ClientMessage`` (clients
///   encode it, the relay decodes it into a ``ClientFrame`` that keeps a field's problem for
///   after its connection checks), ``ServerMessage`` with ``Welcome`` and ``StoredMessage``
///   (the relay encodes it, clients decode it), and ``RelayError``, the relay's stable codes
///   with the deployed server's texts, whose code a client finds again from the text;
/// - the one JSON codec of its frames (``JSONValue``, ``JSONParser``, ``JSONWriter``), which
///   keeps member order and number text.
///
/// No I/O.
public enum MailboxModule {}
