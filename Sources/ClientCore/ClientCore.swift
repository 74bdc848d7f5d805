// The key and wire types moved to SpaceModel, the join's pure machines to JoinProtocol.
// Re-exported only for Tests/TestSupport, which imports ClientCore and is being restructured
// elsewhere; drop these once it imports SpaceModel and JoinProtocol.
@_exported import JoinProtocol
@_exported import SpaceModel

/// Everything a client does: rendezvous, joins, invite links, identity and thread keys, vault.
public enum ClientCoreModule {}
