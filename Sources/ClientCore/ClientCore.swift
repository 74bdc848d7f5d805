/// Everything a client does with I/O: relay connections, the join runner and the invite
/// attendant's driver, space and home clients, vault sync, local state, Wormhole transfer,
/// security keys. Pure types live in SpaceModel (keys, wire types) and JoinProtocol (machines).
public enum ClientCoreModule {}
