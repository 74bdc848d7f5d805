/// HTTP/1.1 and WebSocket (RFC 6455) server and client on epoll, with TLS through OpenSSL.
public enum NetModule {}
