/// Everything a client does: rendezvous, joins, invite links, identity and thread keys, vault.
public enum ClientCoreModule {}
