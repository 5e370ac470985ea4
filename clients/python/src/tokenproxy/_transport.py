"""The HTTP exchange itself (urllib), and the errors it raises when no response arrives."""

import http.client
import socket
import ssl
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
    opener = urllib.request.build_opener(
        urllib.request.HTTPSHandler(context=context),
        # Error statuses are answers, not exceptions, for the retry logic.
        _NoRaise(),
    )

    def send(
        method: str, url: str, headers: Dict[str, str], body: Optional[bytes], timeout: float
    ) -> Response:
        request = urllib.request.Request(url, data=body, headers=headers, method=method)
        deadline = time.monotonic() + timeout
        try:
            with opener.open(request, timeout=timeout) as resp:
                raw = _read_by(resp, deadline)
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, raw
        except urllib.error.HTTPError as err:
            try:
                raw = _read_by(err, deadline)
            except (socket.timeout, TimeoutError) as late:
                raise APITimeoutError(
                    f"No complete response within {timeout} s.", code="timeout"
                ) from late
            return err.code, {k.lower(): v for k, v in err.headers.items()}, raw
        except (socket.timeout, TimeoutError) as err:
            raise APITimeoutError(
                f"No complete response within {timeout} s.", code="timeout"
            ) from err
        except ssl.SSLCertVerificationError as err:
            raise _certificate_error(err) from err
        except urllib.error.URLError as err:
            if isinstance(err.reason, ssl.SSLCertVerificationError):
                raise _certificate_error(err.reason) from err
            if isinstance(err.reason, (socket.timeout, TimeoutError)):
                raise APITimeoutError(
                    f"No complete response within {timeout} s.", code="timeout"
                ) from err
            raise APIConnectionError(
                f"Could not reach the tokenproxy API: {err.reason}", code="connection_error"
            ) from err
        except (http.client.HTTPException, OSError) as err:
            raise APIConnectionError(
                f"Could not reach the tokenproxy API: {err}", code="connection_error"
            ) from err

    return send


def _read_by(resp: Any, deadline: float) -> bytes:
    """The whole body, or TimeoutError once the attempt's deadline passes. urllib's timeout bounds
    each socket read only: a server sending a byte now and then would hold a call for ever."""
    sock = _socket_of(resp)
    chunks = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the response did not arrive in time")
        if sock is not None:
            sock.settimeout(remaining)
        chunk = resp.read1(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _socket_of(resp: Any) -> Optional[socket.socket]:
    """The response's socket, where http.client keeps it (a BufferedReader over a SocketIO);
    None elsewhere, and the deadline is then checked between reads only."""
    raw = getattr(getattr(resp, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


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
