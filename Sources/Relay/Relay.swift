/// The Magic Wormhole mailbox protocol: pure rules, storage back-ends and server glue.
public enum RelayModule {}
