"""The HTTP exchange itself (urllib), and the errors it raises when no response arrives."""

import http.client
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Dict, Optional, Tuple

from ._errors import APICertificateError, APIConnectionError, APITimeoutError

#: (status, lower-case headers, body) of one HTTP exchange.
Response = Tuple[int, Dict[str, str], bytes]
#: One HTTP exchange: (method, url, headers, body, timeout) -> Response. Raises APIConnectionError.
Transport = Callable[[str, str, Dict[str, str], Optional[bytes], float], Response]


def _urllib_transport(context: ssl.SSLContext) -> Transport:
    def send(
        method: str, url: str, headers: Dict[str, str], body: Optional[bytes], timeout: float
    ) -> Response:
        request = urllib.request.Request(url, data=body, headers=headers, method=method)
        deadline = _Deadline(timeout)
        opener = urllib.request.build_opener(
            _HTTPHandler(deadline),
            _HTTPSHandler(context, deadline),
            # Error statuses are answers, not exceptions, for the retry logic.
            _NoRaise(),
        )
        try:
            with opener.open(request, timeout=timeout) as resp:
                raw = resp.read()
                status, answer_headers = resp.status, resp.headers
            if deadline.fired:
                raise _timed_out(timeout)
            return status, {k.lower(): v for k, v in answer_headers.items()}, raw
        except urllib.error.HTTPError as err:
            try:
                raw = err.read()
            except (http.client.HTTPException, OSError) as late:
                if deadline.fired:
                    raise _timed_out(timeout) from late
                raise
            if deadline.fired:
                raise _timed_out(timeout) from err
            return err.code, {k.lower(): v for k, v in err.headers.items()}, raw
        except (socket.timeout, TimeoutError) as err:
            raise _timed_out(timeout) from err
        except ssl.SSLCertVerificationError as err:
            raise _certificate_error(err) from err
        except urllib.error.URLError as err:
            if isinstance(err.reason, ssl.SSLCertVerificationError):
                raise _certificate_error(err.reason) from err
            if deadline.fired or isinstance(err.reason, (socket.timeout, TimeoutError)):
                raise _timed_out(timeout) from err
            raise APIConnectionError(
                f"Could not reach the tokenproxy API: {err.reason}", code="connection_error"
            ) from err
        except (http.client.HTTPException, OSError) as err:
            if deadline.fired:
                raise _timed_out(timeout) from err
            raise APIConnectionError(
                f"Could not reach the tokenproxy API: {err}", code="connection_error"
            ) from err
        finally:
            deadline.stop()

    return send


def _timed_out(timeout: float) -> APITimeoutError:
    return APITimeoutError(f"No complete response within {timeout} s.", code="timeout")


class _Deadline:
    """Ends an attempt that outlives its timeout. urllib's timeout bounds each socket operation
    only: a server sending a byte now and then, in its status line, its headers or its body, would
    hold a call for ever. At the deadline the connection's socket is shut down, which ends a read in
    progress at once; the attempt then raises APITimeoutError, never returns what arrived so far."""

    def __init__(self, timeout: float) -> None:
        self._at = time.monotonic() + timeout
        self._lock = threading.Lock()
        self._timer: Optional[threading.Timer] = None
        self._done = False
        self.fired = False

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            if self._done:
                return
            timer = threading.Timer(max(0.0, self._at - time.monotonic()), self._fire, (sock,))
            timer.daemon = True
            self._timer = timer
            timer.start()

    def _fire(self, sock: socket.socket) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed

    def stop(self) -> None:
        with self._lock:
            self._done = True
            timer = self._timer
        if timer is not None:
            timer.cancel()


def _watched(connection_class: Any, deadline: _Deadline) -> Callable[..., Any]:
    """urllib's connection class, whose socket the deadline watches from its connection on."""

    def make(host: str, **kwargs: Any) -> Any:
        conn = connection_class(host, **kwargs)
        connect = conn.connect

        def connect_watched() -> None:
            connect()
            deadline.watch(conn.sock)

        conn.connect = connect_watched
        return conn

    return make


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: Any) -> Any:
        return self.do_open(_watched(http.client.HTTPConnection, self._deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, context: ssl.SSLContext, deadline: _Deadline) -> None:
        super().__init__(context=context)
        self._context = context
        self._deadline = deadline

    def https_open(self, req: Any) -> Any:
        return self.do_open(
            _watched(http.client.HTTPSConnection, self._deadline), req, context=self._context
        )


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


class _NoRaise(urllib.request.HTTPErrorProcessor):
    def http_response(self, request: Any, response: Any) -> Any:
        return response

    https_response = http_response
