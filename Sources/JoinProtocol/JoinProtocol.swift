/// The pure machines of a short-code join, with no I/O: the rendezvous machine over `Mailbox`'s
/// messages (`Rendezvous/`), the join handshake, sessions, channel, messages and verification
/// words (`Join/`), and an invite's whole life (`Attendant/InviteAttendant`). Time and randomness
/// are passed in; the relay connections and the drivers live in `ClientCore`.
public enum JoinProtocolModule {}
