/// SPAKE2 (RFC 9382 and the Magic Wormhole symmetric variant), HKDF, and the secret types the
/// rest of Eleven builds on. No I/O.
public enum PAKEModule {}
