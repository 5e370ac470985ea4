"""The HTTP exchange itself (http.client on kept-alive connections), and the errors it raises when
no response arrives."""

import functools
import http.client
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from ._errors import APICertificateError, APIConnectionError, APITimeoutError
from ._pool import Pool, Route, keep_for, route_for

#: (status, lower-case headers, body) of one HTTP exchange.
Response = Tuple[int, Dict[str, str], bytes]
#: One HTTP exchange: (method, url, headers, body, timeout) -> Response. Raises APIConnectionError.
Transport = Callable[[str, str, Dict[str, str], Optional[bytes], float], Response]

#: How a kept connection the server closed while it sat idle fails: on sending (BrokenPipeError,
#: ConnectionResetError) or on awaiting the answer (RemoteDisconnected, which is both a
#: ConnectionResetError and a BadStatusLine: the connection ended before a status line).
_STALE = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, ssl.SSLEOFError)
#: Methods this API lets a client repeat without an Idempotency-Key: GET reads, and every PATCH
#: sets absolute values (the server takes a key on POST and DELETE only).
_REPEATABLE = frozenset({"GET", "HEAD", "OPTIONS", "PATCH"})


def _http_transport(context: ssl.SSLContext, pool: Pool) -> Transport:
    def send(
        method: str, url: str, headers: Dict[str, str], body: Optional[bytes], timeout: float
    ) -> Response:
        return _Attempt(context, pool, _Call(method, url, headers, body, timeout)).run()

    return send


@dataclass(frozen=True)
class _Call:
    method: str
    url: str
    headers: Dict[str, str]
    body: Optional[bytes]
    timeout: float

    def repeatable(self) -> bool:
        """Sending it twice does what sending it once does: a POST or DELETE carries the key under
        which the server answers a repeat with the first answer, and does not act again."""
        keyed = any(name.lower() == "idempotency-key" for name in self.headers)
        return keyed or self.method in _REPEATABLE


class _Stale(Exception):
    """A kept connection turned out closed before any byte of the answer arrived."""


class _Attempt:
    """One attempt of a call, on a kept connection when the pool has one. When that connection
    turns out closed by the server (its idle timeout, a restart) before any byte of an answer, the
    call is sent once more on a fresh connection: the old transport would have opened one anyway.
    Only a repeatable call (see ``_Call.repeatable``; every call this client makes is one) is sent
    again, since the server may have received it before the connection went. Both sends share the
    attempt's deadline, and a connection whose attempt failed or ran out of time is never kept."""

    def __init__(self, context: ssl.SSLContext, pool: Pool, call: _Call) -> None:
        self._context = context
        self._pool = pool
        self._call = call
        self._deadline = _Deadline(call.timeout)

    def run(self) -> Response:
        try:
            route = route_for(self._call.url)
            kept = self._pool.take(route)
            if kept is not None:
                try:
                    return self._exchange(route, kept, reused=True)
                except _Stale:
                    pass  # closed while idle: once more, on a fresh connection
            return self._exchange(route, self._connect(route), reused=False)
        except (http.client.HTTPException, OSError) as err:
            raise _api_error(err, self._deadline.fired, self._call.timeout) from err
        finally:
            self._deadline.stop()

    def _connect(self, route: Route) -> http.client.HTTPConnection:
        # Connecting is bounded by what is left of the attempt: the deadline watches a socket only
        # once it is connected (http.client connects and shakes hands in one call).
        conn = route.connection(self._context, self._deadline.remaining())
        try:
            conn.connect()
        except BaseException:
            conn.close()  # a refused handshake or tunnel leaves its socket open otherwise
            raise
        return conn

    def _exchange(self, route: Route, conn: http.client.HTTPConnection, reused: bool) -> Response:
        call = self._call
        assert conn.sock is not None  # connected, or taken from the pool as open
        self._deadline.watch(conn.sock)
        # A kept connection carries the timeout of the call that opened it.
        conn.sock.settimeout(call.timeout)
        first = _FirstByte()
        conn.response_class = functools.partial(_Response, first)  # type: ignore[assignment]
        try:
            status, headers, raw, keep = _send_and_read(route, conn, call)
        except BaseException as err:
            conn.close()
            stale = isinstance(err, _STALE) and not first.arrived and not self._deadline.fired
            if reused and stale and call.repeatable():
                raise _Stale() from err
            raise
        # From here on the deadline cannot fire: a connection it did not shut down may be kept.
        self._deadline.stop()
        if self._deadline.fired:
            conn.close()
            raise _timed_out(call.timeout)
        if keep:
            self._pool.give(route, conn, keep_for(headers))
        else:
            conn.close()
        return status, headers, raw


def _send_and_read(
    route: Route, conn: http.client.HTTPConnection, call: _Call
) -> Tuple[int, Dict[str, str], bytes, bool]:
    """Sends the call and reads the whole answer; the last item says whether the connection may be
    used again."""
    conn.request(call.method, route.target(call.url), call.body, route.headers(call.headers))
    with conn.getresponse() as response:
        raw = response.read()
        headers = {k.lower(): v for k, v in response.headers.items()}
        # http.client has already let go of the socket of a `Connection: close` answer
        # (conn.sock is None); an HTTP/1.0 server is not trusted to keep one open either.
        keep = (
            response.version == 11
            and not response.will_close
            and response.isclosed()  # read to its end: nothing of it is left on the connection
            and conn.sock is not None
        )
    return response.status, headers, raw, keep


@dataclass
class _FirstByte:
    arrived: bool = False


class _Response(http.client.HTTPResponse):
    """Notes when the first byte of the answer arrives. A kept connection that fails before it
    carried no answer at all; one that fails after was answered, however badly, and is not a
    closed idle connection."""

    def __init__(self, first: _FirstByte, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self._first = first

    def begin(self) -> None:
        if self.headers is None and self.fp is not None and self.fp.peek(1):
            self._first.arrived = True
        super().begin()


def _api_error(err: BaseException, fired: bool, timeout: float) -> APIConnectionError:
    if isinstance(err, ssl.SSLCertVerificationError):
        return _certificate_error(err)
    if fired or isinstance(err, (socket.timeout, TimeoutError)):
        return _timed_out(timeout)
    return APIConnectionError(f"Could not reach the tokenproxy API: {err}", code="connection_error")


def _timed_out(timeout: float) -> APITimeoutError:
    return APITimeoutError(f"No complete response within {timeout} s.", code="timeout")


class _Deadline:
    """Ends an attempt that outlives its timeout. A socket timeout bounds each socket operation
    only: a server sending a byte now and then, in its status line, its headers or its body, would
    hold a call for ever. At the deadline the socket in use is shut down, which ends a read in
    progress at once; the attempt then raises APITimeoutError, never returns what arrived so far,
    and its connection is not kept. The socket watched is the latest given to ``watch``: a kept
    connection's, then a fresh one's when the kept one had been closed by the server."""

    def __init__(self, timeout: float) -> None:
        self._at = time.monotonic() + timeout
        self._lock = threading.Lock()
        self._timer: Optional[threading.Timer] = None
        self._sock: Optional[socket.socket] = None
        self._done = False
        self.fired = False

    def remaining(self) -> float:
        return max(0.001, self._at - time.monotonic())

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            if self._done:
                return
            self._sock = sock
            fired = self.fired
            if self._timer is None and not fired:
                self._timer = threading.Timer(max(0.0, self._at - time.monotonic()), self._fire)
                self._timer.daemon = True
                self._timer.start()
        if fired:
            _shut(sock)  # the time ran out before this socket was in use

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            sock = self._sock
        if sock is not None:
            _shut(sock)

    def stop(self) -> None:
        with self._lock:
            self._done = True
            timer = self._timer
        if timer is not None:
            timer.cancel()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


# OpenSSL verify codes: the chain does not end at a trusted CA (self-signed, unknown issuer).
_UNTRUSTED = {18, 19, 20, 21, 27}


def _certificate_error(err: ssl.SSLCertVerificationError) -> APICertificateError:
    detail = getattr(err, "verify_message", None) or str(err)
    if getattr(err, "verify_code", None) in _UNTRUSTED:
        return APICertificateError(
            f"The tokenproxy server's TLS certificate is not trusted ({detail}). A server without "
            "tls_cert uses the self-signed certificate in its data directory: pass it as "
            "TokenProxy(ca_file='tokenproxy-data/tls/cert.pem').",
            code="certificate_untrusted",
        )
    return APICertificateError(
        f"The tokenproxy server's TLS certificate does not fit this connection ({detail}): check "
        "that base_url uses a host name the certificate names, and that it has not expired.",
        code="certificate_invalid",
    )
