/// The Magic Wormhole mailbox protocol v1's shared vocabulary (`wormhole-protocol.md`): the
/// identifiers (``AppID``, ``Side``, ``Nameplate``, ``MailboxID``, ``Phase``, ``Mood``) and the
/// one JSON codec of its frames (``JSONValue``, ``JSONParser``, ``JSONWriter``), which keeps
/// member order and number text. The relay (`Relay`) and the clients (`JoinProtocol`,
/// `WordCodes`) both depend on this module so each identifier is defined once. No I/O.
public enum MailboxModule {}
