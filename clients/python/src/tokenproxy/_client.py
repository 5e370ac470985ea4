import dataclasses
import json
import os
import random
import socket
import ssl
import time
import uuid
import http.client
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

from ._errors import (
    APICertificateError,
    APIConnectionError,
    APITimeoutError,
    TokenProxyError,
    error_for_status,
)
from ._models import (
    Account,
    Anomaly,
    CreatedToken,
    CreatedWebhook,
    Delivery,
    Event,
    Key,
    Provider,
    RateLimit,
    RequestLog,
    Token,
    Usage,
    UsageBucket,
    Webhook,
    WebhookTest,
    Redelivery,
    from_json,
)
from ._access import ApiKeys, Audit
from ._pagination import Page
from ._routes import ID_FIELDS, ROUTES

__version__ = "0.1.0"

T = TypeVar("T")

#: (status, lower-case headers, body) of one HTTP exchange.
Response = Tuple[int, Dict[str, str], bytes]
#: One HTTP exchange: (method, url, headers, body, timeout) -> Response. Raises APIConnectionError.
Transport = Callable[[str, str, Dict[str, str], Optional[bytes], float], Response]

DEFAULT_BASE_URL = "https://localhost:8443/v1"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2
INITIAL_BACKOFF = 0.5
MAX_BACKOFF = 8.0
#: A Retry-After longer than this is not waited for: the error goes to the caller instead.
MAX_RETRY_AFTER = 60.0


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: Marks a parameter as not given, where ``None`` has a meaning of its own (clearing a field).
UNSET: Any = _Unset()


class TokenProxy:
    """Client of the tokenproxy management API. Each resource method calls exactly one endpoint
    (see ``ROUTES``). It logs nothing, and the API key is kept out of its repr and errors."""

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
        self._transport: Transport = _urllib_transport(context)

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
        # first attempt's result instead of creating a second token.
        if method == "POST":
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())

        attempt = 0
        while True:
            try:
                status, resp_headers, raw = self._transport(method, url, headers, data, self.timeout)
            except APICertificateError:
                # A refused certificate is refused again: no retry, the message says how to trust it.
                raise
            except APIConnectionError:
                # Every method is safe to repeat (GET, DELETE, PATCH of absolute values, POST with
                # its key).
                if attempt < self.max_retries:
                    time.sleep(_backoff(attempt))
                    attempt += 1
                    continue
                raise
            if 200 <= status < 300:
                try:
                    return json.loads(raw.decode("utf-8"))
                except ValueError as err:
                    raise TokenProxyError(
                        f"The API answered {status} with a body that is not JSON.",
                        code="invalid_response",
                        status=status,
                        request_id=resp_headers.get("x-request-id"),
                    ) from err
            error = _to_error(status, resp_headers, raw)
            wait = _retry_delay(status, resp_headers, error, attempt)
            if wait is not None and attempt < self.max_retries:
                time.sleep(wait)
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


class Tokens:
    def __init__(self, client: TokenProxy) -> None:
        self._client = client

    def create(
        self,
        *,
        name: str,
        provider: str,
        allowed_hosts: Sequence[str],
        real_key: Optional[str] = None,
        key_id: Optional[str] = None,
        allowed_ips: Optional[Sequence[str]] = None,
        rate_limit: Optional[Union[RateLimit, Mapping[str, Any]]] = None,
        expires_at: Optional[Union[str, datetime]] = None,
        budget: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> CreatedToken:
        """POST /v1/tokens. The result's ``sanitized_key`` is shown only here."""
        body = {
            "name": name,
            "provider": provider,
            "allowed_hosts": list(allowed_hosts),
            "real_key": real_key,
            "key_id": key_id,
            "allowed_ips": None if allowed_ips is None else list(allowed_ips),
            "rate_limit": rate_limit,
            "expires_at": expires_at,
            "budget": None if budget is None else dict(budget),
        }
        return self._client._one(
            "tokens.create", CreatedToken, body=body, idempotency_key=idempotency_key
        )

    def list(
        self, *, status: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Page[Token]:
        """GET /v1/tokens, newest first. Iterate the page to walk every page."""
        return self._client._list("tokens.list", Token, {"status": status, "limit": limit, "cursor": cursor})

    def get(self, id: str) -> Token:
        """GET /v1/tokens/:id"""
        return self._client._one("tokens.get", Token, id=id)

    def revoke(self, id: str) -> Token:
        """DELETE /v1/tokens/:id. Idempotent; the token comes back with status ``revoked``."""
        return self._client._one("tokens.revoke", Token, id=id)

    def update(
        self,
        id: str,
        *,
        name: Any = UNSET,
        allowed_hosts: Any = UNSET,
        allowed_ips: Any = UNSET,
        rate_limit: Any = UNSET,
        expires_at: Any = UNSET,
        budget: Any = UNSET,
    ) -> Token:
        """PATCH /v1/tokens/:id. Omitted fields are unchanged; ``rate_limit=None``,
        ``expires_at=None`` and ``budget=None`` remove them. Effective on the token's next request.
        A budget is ``{"amount_usd": 20, "period": "month"}`` or ``{"tokens": 2000000, "period": "day"}``."""
        fields = (
            ("name", name),
            ("allowed_hosts", allowed_hosts if allowed_hosts is UNSET else list(allowed_hosts)),
            ("allowed_ips", allowed_ips if allowed_ips is UNSET else list(allowed_ips)),
            ("rate_limit", rate_limit),
            ("expires_at", expires_at),
            ("budget", budget),
        )
        body = {k: v for k, v in fields if v is not UNSET}
        return self._client._one("tokens.update", Token, id=id, body=body, keep_nulls=True)

    def revoke_all(self, *, idempotency_key: Optional[str] = None) -> List[Token]:
        """POST /v1/tokens/revoke_all: the kill switch. Revokes every active token of the account
        (one ``token.revoked`` event each) and returns them."""
        raw = self._client._request("tokens.revoke_all", idempotency_key=idempotency_key)
        return [from_json(Token, item, ID_FIELDS["tokens"]) for item in raw.get("data", [])]


class Keys:
    def __init__(self, client: TokenProxy) -> None:
        self._client = client

    def create(
        self, *, name: str, provider: str, real_key: str, idempotency_key: Optional[str] = None
    ) -> Key:
        """POST /v1/keys"""
        body = {"name": name, "provider": provider, "real_key": real_key}
        return self._client._one("keys.create", Key, body=body, idempotency_key=idempotency_key)

    def list(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page[Key]:
        """GET /v1/keys"""
        return self._client._list("keys.list", Key, {"limit": limit, "cursor": cursor})

    def get(self, id: str) -> Key:
        """GET /v1/keys/:id"""
        return self._client._one("keys.get", Key, id=id)

    def rotate(self, id: str, *, real_key: str, idempotency_key: Optional[str] = None) -> Key:
        """POST /v1/keys/:id/rotate. Tokens using the key send the new one from their next request."""
        return self._client._one(
            "keys.rotate", Key, id=id, body={"real_key": real_key}, idempotency_key=idempotency_key
        )

    def delete(self, id: str) -> Key:
        """DELETE /v1/keys/:id. Destroys the stored key and revokes its tokens."""
        return self._client._one("keys.delete", Key, id=id)


class Webhooks:
    def __init__(self, client: TokenProxy) -> None:
        self._client = client

    def create(
        self, *, url: str, events: Sequence[str], idempotency_key: Optional[str] = None
    ) -> CreatedWebhook:
        """POST /v1/webhooks. The result's ``secret`` (for verify_webhook) is shown only here."""
        body = {"url": url, "events": list(events)}
        return self._client._one(
            "webhooks.create", CreatedWebhook, body=body, idempotency_key=idempotency_key
        )

    def list(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page[Webhook]:
        """GET /v1/webhooks"""
        return self._client._list("webhooks.list", Webhook, {"limit": limit, "cursor": cursor})

    def get(self, id: str) -> Webhook:
        """GET /v1/webhooks/:id"""
        return self._client._one("webhooks.get", Webhook, id=id)

    def deliveries(
        self, id: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Page[Delivery]:
        """GET /v1/webhooks/:id/deliveries: recent deliveries and their outcome, newest first."""
        return self._client._list(
            "webhooks.deliveries", Delivery, {"limit": limit, "cursor": cursor}, id=id, item_resource="deliveries"
        )

    def delete(self, id: str) -> Webhook:
        """DELETE /v1/webhooks/:id"""
        return self._client._one("webhooks.delete", Webhook, id=id)

    def update(self, id: str, *, enabled: bool) -> Webhook:
        """PATCH /v1/webhooks/:id. ``enabled=True`` re-enables a disabled endpoint, ``False`` stops it."""
        return self._client._one("webhooks.update", Webhook, id=id, body={"enabled": enabled})

    def test(self, id: str) -> WebhookTest:
        """POST /v1/webhooks/:id/test: queues a signed ``ping`` event to the endpoint."""
        return from_json(WebhookTest, self._client._request("webhooks.test", id=id))


class Events:
    def __init__(self, client: TokenProxy) -> None:
        self._client = client

    def list(
        self, *, type: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Page[Event]:
        """GET /v1/events"""
        return self._client._list("events.list", Event, {"type": type, "limit": limit, "cursor": cursor})

    def redeliver(self, id: str, *, webhook_id: Optional[str] = None) -> Redelivery:
        """POST /v1/events/:id/redeliver: sends the event again, to ``webhook_id`` only or to every
        enabled endpoint subscribed to its type."""
        raw = self._client._request("events.redeliver", id=id, query={"webhook_id": webhook_id})
        return from_json(Redelivery, raw)


class Anomalies:
    def __init__(self, client: TokenProxy) -> None:
        self._client = client

    def list(
        self, *, token_id: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Page[Anomaly]:
        """GET /v1/anomalies"""
        query = {"token_id": token_id, "limit": limit, "cursor": cursor}
        return self._client._list("anomalies.list", Anomaly, query)


class Logs:
    def __init__(self, client: TokenProxy) -> None:
        self._client = client

    def list(
        self,
        *,
        token_id: Optional[str] = None,
        authorized: Optional[bool] = None,
        status: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        error_code: Optional[str] = None,
        ip: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Page[RequestLog]:
        """GET /v1/logs. ``status``: one HTTP status (``"429"``) or a class (``"4xx"``); ``since``
        (inclusive) and ``until`` (exclusive): ISO 8601 times with a zone; ``error_code``: a code of
        docs/errors.md; ``ip``: one client address."""
        query = {
            "token_id": token_id,
            "authorized": authorized,
            "status": status,
            "since": since,
            "until": until,
            "error_code": error_code,
            "ip": ip,
            "limit": limit,
            "cursor": cursor,
        }
        return self._client._list("logs.list", RequestLog, query)

    def get(self, request_id: str) -> RequestLog:
        """GET /v1/logs/:request_id: the record of the id a caller got in ``x-tokenproxy-request-id``."""
        return self._client._one("logs.get", RequestLog, id=request_id)


class AccountResource:
    def __init__(self, client: TokenProxy) -> None:
        self._client = client

    def get(self) -> Account:
        """GET /v1/account"""
        return self._client._one("account.get", Account)

    def update(self, *, name: Any = UNSET, alert_email: Any = UNSET, budget: Any = UNSET) -> Account:
        """PATCH /v1/account. ``alert_email=None`` clears the address and ``budget=None`` removes the
        account's budget; omitted fields are unchanged."""
        fields = (("name", name), ("alert_email", alert_email), ("budget", budget))
        body = {k: v for k, v in fields if v is not UNSET}
        return self._client._one("account.update", Account, body=body, keep_nulls=True)


class Providers:
    def __init__(self, client: TokenProxy) -> None:
        self._client = client

    def list(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page[Provider]:
        """GET /v1/providers"""
        return self._client._list("providers.list", Provider, {"limit": limit, "cursor": cursor})


class UsageResource:
    def __init__(self, client: TokenProxy) -> None:
        self._client = client

    def get(self, *, window: Optional[str] = None, bucket: Optional[str] = None) -> Usage:
        """GET /v1/usage: forwarded and refused requests per bucket (``1h``/``1d``) over the window
        (``24h``/``7d``), provider tokens and cost (``spend``) and spend against budgets."""
        raw = self._client._request("usage.get", query={"window": window, "bucket": bucket})
        usage = from_json(Usage, raw)
        buckets = [from_json(UsageBucket, b) for b in raw.get("buckets", [])]
        return dataclasses.replace(
            usage,
            buckets=buckets,
            refused_by_reason=dict(raw.get("refused_by_reason", {})),
            spend=raw.get("spend"),
            budgets=raw.get("budgets"),
        )


# -- helpers ---------------------------------------------------------------------------------------


def _normalise_base_url(value: str) -> str:
    parts = urllib.parse.urlsplit(value)
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _expand_path(path: str, id: Optional[str]) -> str:
    if ":id" not in path:
        return path
    if not id:
        raise TypeError("An id is required.")
    return path.replace(":id", urllib.parse.quote(id, safe=""))


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _wire(value: Any, keep_nulls: bool = False) -> Any:
    """JSON body: dataclasses and datetimes converted; top-level members left as None are not
    sent unless ``keep_nulls`` (where null means "clear this field")."""
    if isinstance(value, Mapping):
        return {k: _value(v) for k, v in value.items() if keep_nulls or v is not None}
    return _value(value)


def _value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, RateLimit):
        return {"requests": value.requests, "window": value.window}
    if isinstance(value, Mapping):
        return {k: _value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    return value


def _to_error(status: int, headers: Dict[str, str], raw: bytes) -> TokenProxyError:
    error: Dict[str, Any] = {}
    try:
        body = json.loads(raw.decode("utf-8"))
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
    except ValueError:
        pass

    def text(key: str) -> Optional[str]:
        value = error.get(key)
        return value if isinstance(value, str) else None

    return error_for_status(
        status,
        text("message") or f"The API answered with status {status}.",
        code=text("code"),
        type=text("type"),
        param=text("param"),
        request_id=text("request_id") or headers.get("x-request-id"),
        headers=headers,
    )


def _retry_delay(
    status: int, headers: Dict[str, str], error: TokenProxyError, attempt: int
) -> Optional[float]:
    """Seconds to wait before retrying this error response; None when it must not be retried."""
    if not (status == 429 or status >= 500 or error.code == "idempotency_in_progress"):
        return None
    header = headers.get("retry-after")
    if header is None:
        return _backoff(attempt)
    try:
        seconds = float(header)
    except ValueError:
        return _backoff(attempt)
    return None if seconds > MAX_RETRY_AFTER else max(0.0, seconds)


def _backoff(attempt: int) -> float:
    """Exponential with jitter, so many clients failing together do not retry in lockstep."""
    base: float = min(MAX_BACKOFF, INITIAL_BACKOFF * (2**attempt))
    return base * (0.5 + random.random() * 0.5)


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
        try:
            with opener.open(request, timeout=timeout) as resp:
                raw = resp.read()
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, raw
        except urllib.error.HTTPError as err:
            raw = err.read()
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
