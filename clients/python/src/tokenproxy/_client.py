import json
import os
import ssl
import uuid
import urllib.parse
import weakref
# Its own reference, so a test can stub the retry waits without touching time.sleep.
from time import sleep
from types import TracebackType
from typing import Any, Dict, Mapping, Optional, Type, TypeVar

from ._errors import APICertificateError, APIConnectionError
from ._models import from_json
from ._access import ApiKeys, Audit
from ._pagination import Page
from ._resources import (
    AccountResource,
    Anomalies,
    Events,
    Keys,
    Logs,
    Providers,
    Tokens,
    UsageResource,
    Webhooks,
)
from ._retry import _backoff, _retry_delay
from ._routes import ID_FIELDS, ROUTES
from ._pool import Pool
from ._transport import Transport, _http_transport
from ._wire import (
    _expand_path,
    _normalise_base_url,
    _parse_json,
    _query_value,
    _to_error,
    _wire,
)

__version__ = "0.1.0"

T = TypeVar("T")

DEFAULT_BASE_URL = "https://localhost:8443/v1"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2


class TokenProxy:
    """Client of the tokenproxy management API. Each resource method calls exactly one endpoint
    (see ``ROUTES``). It logs nothing, and the API key is kept out of its repr and errors.

    Calls reuse kept-alive connections (HTTP/1.1), so only the first pays the TLS handshake; one
    client may be used from several threads at once, each call on a connection of its own from a
    small shared pool. ``close()``, or leaving a ``with`` block, closes the kept connections."""

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        *,
        ca_file: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        """
        :param api_key: account API key ``svc_sk_…`` (default: ``TOKENPROXY_API_KEY``).
        :param base_url: ``https://host:8443/v1`` (``/v1`` is added when missing).
        :param ca_file: extra trusted CA (PEM), e.g. the server's ``<data-dir>/tls/cert.pem``.
            Public CAs stay trusted and verification stays on.
        :param timeout: seconds per attempt.
        :param max_retries: retries after a network error, 429 or 5xx.
        """
        key = api_key if api_key is not None else os.environ.get("TOKENPROXY_API_KEY")
        if not key:
            raise TypeError("TokenProxy needs an API key: pass api_key= or set TOKENPROXY_API_KEY.")
        _check_api_key(key)
        self._api_key = key
        self.base_url = _normalise_base_url(
            base_url or os.environ.get("TOKENPROXY_BASE_URL") or DEFAULT_BASE_URL
        )
        self.timeout = timeout
        self.max_retries = max_retries
        context = ssl.create_default_context()
        if ca_file is not None:
            # Added to the default trust store, not instead of it; hostname checks stay on.
            context.load_verify_locations(cafile=ca_file)
        self._pool = Pool()
        self._transport: Transport = _http_transport(context, self._pool)
        # A client dropped without close() still closes its kept connections once it is collected
        # (the resources point back at the client, so that is at the next garbage collection).
        self._close_pool = weakref.finalize(self, self._pool.close)

        self.tokens = Tokens(self)
        self.keys = Keys(self)
        self.webhooks = Webhooks(self)
        self.events = Events(self)
        self.anomalies = Anomalies(self)
        self.logs = Logs(self)
        self.account = AccountResource(self)
        self.providers = Providers(self)
        self.usage = UsageResource(self)
        self.api_keys = ApiKeys(self)
        self.audit = Audit(self)

    def __repr__(self) -> str:
        return f"TokenProxy(base_url={self.base_url!r})"

    def close(self) -> None:
        """Closes the connections kept open for reuse. The client still works afterwards, opening
        a connection per call and closing it after the answer."""
        self._close_pool()

    def __enter__(self) -> "TokenProxy":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------------

    def _request(
        self,
        route: str,
        *,
        id: Optional[str] = None,
        query: Optional[Mapping[str, Any]] = None,
        body: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
        keep_nulls: bool = False,
    ) -> Any:
        method, path = ROUTES[route]
        url = self.base_url + _expand_path(path, id)
        if query:
            params = {k: _query_value(v) for k, v in query.items() if v is not None}
            if params:
                url += "?" + urllib.parse.urlencode(params)
        headers = {
            "Authorization": f"Bearer {self._api_key}",
            "Accept": "application/json",
            "User-Agent": f"tokenproxy-python/{__version__}",
        }
        data: Optional[bytes] = None
        if body is not None:
            data = json.dumps(_wire(body, keep_nulls)).encode("utf-8")
            headers["Content-Type"] = "application/json"
        # One key per call, the same on every retry: the server answers a retried create with the
        # first attempt's result instead of creating a second token, and a retried delete with the
        # first attempt's answer instead of 404.
        if method in ("POST", "DELETE"):
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())

        attempt = 0
        while True:
            try:
                status, resp_headers, raw = self._transport(method, url, headers, data, self.timeout)
            except APICertificateError:
                # A refused certificate is refused again: no retry, the message says how to trust it.
                raise
            except APIConnectionError:
                # Every method is safe to repeat (GET, PATCH of absolute values, POST and DELETE
                # with their key).
                if attempt < self.max_retries:
                    sleep(_backoff(attempt))
                    attempt += 1
                    continue
                raise
            if 200 <= status < 300:
                return _parse_json(status, resp_headers, raw)
            error = _to_error(status, resp_headers, raw)
            wait = _retry_delay(status, resp_headers, error, attempt)
            if wait is not None and attempt < self.max_retries:
                sleep(wait)
                attempt += 1
                continue
            raise error

    def _one(self, route: str, cls: Type[T], **kwargs: Any) -> T:
        data = self._request(route, **kwargs)
        return from_json(cls, data, ID_FIELDS.get(route.split(".")[0]))

    def _list(
        self,
        route: str,
        cls: Type[T],
        query: Dict[str, Any],
        id: Optional[str] = None,
        item_resource: Optional[str] = None,
    ) -> Page[T]:
        id_field = ID_FIELDS.get(item_resource or route.split(".")[0])

        def load(cursor: Optional[str]) -> Page[T]:
            q = dict(query)
            if cursor is not None:
                q["cursor"] = cursor
            raw = self._request(route, id=id, query=q)
            items = [from_json(cls, item, id_field) for item in raw.get("data", [])]
            return Page(items, bool(raw.get("has_more")), raw.get("next_cursor"), load)

        return load(query.get("cursor"))


def _check_api_key(key: str) -> None:
    """A key with a space, a line break or a non-ASCII character cannot go into a header, and
    http.client's error would quote the whole header, key included. Say so without the key."""
    for position, char in enumerate(key):
        if not "\x21" <= char <= "\x7e":
            raise ValueError(
                f"The API key has a character that cannot be sent in an HTTP header at position "
                f"{position + 1} ({_describe(char)}). Copy the key again exactly as printed: "
                "svc_sk_ followed by 43 letters and digits."
            )


def _describe(char: str) -> str:
    if char in "\r\n":
        return "a line break"
    if char.isspace():
        return "a space or tab"
    if ord(char) > 0x7E:
        return f"the non-ASCII character U+{ord(char):04X}"
    return f"the control character U+{ord(char):04X}"
