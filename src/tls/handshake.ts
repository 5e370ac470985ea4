/**
 * How long both listeners wait for a connection's TLS handshake (Node's default is 120 s). Until it
 * is done the peer has proven nothing, yet holds a socket and a file descriptor: a TLS 1.3
 * handshake takes one round trip, so 20 s (the time the whole request head gets) is generous.
 */
export const TLS_HANDSHAKE_TIMEOUT_MS = 20_000;
