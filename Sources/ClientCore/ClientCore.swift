// The key and wire types moved to SpaceModel. Re-exported only for Tests/TestSupport, which
// imports ClientCore and is being restructured elsewhere; drop this once it imports SpaceModel.
@_exported import SpaceModel

/// Everything a client does: rendezvous, joins, invite links, identity and thread keys, vault.
public enum ClientCoreModule {}
