/// The wordlist and the short codes people say, type and mistype.
public enum WordCodesModule {}
