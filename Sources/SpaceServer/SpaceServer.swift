/// The space and home HTTP API and its storage.
public enum SpaceServerModule {}
