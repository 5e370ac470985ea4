"""The API's resources (tokens, keys, webhooks, …): one method per endpoint, each calling the client."""

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence, Union

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
from ._pagination import Page
from ._routes import ID_FIELDS

if TYPE_CHECKING:
    from ._client import TokenProxy


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: Marks a parameter as not given, where ``None`` has a meaning of its own (clearing a field).
UNSET: Any = _Unset()


class Tokens:
    def __init__(self, client: "TokenProxy") -> None:
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

    def revoke(self, id: str, *, idempotency_key: Optional[str] = None) -> Token:
        """DELETE /v1/tokens/:id. Idempotent; the token comes back with status ``revoked``."""
        return self._client._one("tokens.revoke", Token, id=id, idempotency_key=idempotency_key)

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
    def __init__(self, client: "TokenProxy") -> None:
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

    def delete(self, id: str, *, idempotency_key: Optional[str] = None) -> Key:
        """DELETE /v1/keys/:id. Destroys the stored key and revokes its tokens."""
        return self._client._one("keys.delete", Key, id=id, idempotency_key=idempotency_key)


class Webhooks:
    def __init__(self, client: "TokenProxy") -> None:
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

    def delete(self, id: str, *, idempotency_key: Optional[str] = None) -> Webhook:
        """DELETE /v1/webhooks/:id"""
        return self._client._one(
            "webhooks.delete", Webhook, id=id, idempotency_key=idempotency_key
        )

    def update(self, id: str, *, enabled: bool) -> Webhook:
        """PATCH /v1/webhooks/:id. ``enabled=True`` re-enables a disabled endpoint, ``False`` stops it."""
        return self._client._one("webhooks.update", Webhook, id=id, body={"enabled": enabled})

    def test(self, id: str, *, idempotency_key: Optional[str] = None) -> WebhookTest:
        """POST /v1/webhooks/:id/test: queues a signed ``ping`` event to the endpoint."""
        raw = self._client._request("webhooks.test", id=id, idempotency_key=idempotency_key)
        return from_json(WebhookTest, raw)


class Events:
    def __init__(self, client: "TokenProxy") -> None:
        self._client = client

    def list(
        self, *, type: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Page[Event]:
        """GET /v1/events"""
        return self._client._list("events.list", Event, {"type": type, "limit": limit, "cursor": cursor})

    def redeliver(
        self, id: str, *, webhook_id: Optional[str] = None, idempotency_key: Optional[str] = None
    ) -> Redelivery:
        """POST /v1/events/:id/redeliver: sends the event again, to ``webhook_id`` only or to every
        enabled endpoint subscribed to its type."""
        raw = self._client._request(
            "events.redeliver",
            id=id,
            query={"webhook_id": webhook_id},
            idempotency_key=idempotency_key,
        )
        return from_json(Redelivery, raw)


class Anomalies:
    def __init__(self, client: "TokenProxy") -> None:
        self._client = client

    def list(
        self, *, token_id: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Page[Anomaly]:
        """GET /v1/anomalies"""
        query = {"token_id": token_id, "limit": limit, "cursor": cursor}
        return self._client._list("anomalies.list", Anomaly, query)


class Logs:
    def __init__(self, client: "TokenProxy") -> None:
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
    def __init__(self, client: "TokenProxy") -> None:
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
    def __init__(self, client: "TokenProxy") -> None:
        self._client = client

    def list(self) -> Page[Provider]:
        """GET /v1/providers: every provider, on one page (the endpoint takes no parameters)."""
        return self._client._list("providers.list", Provider, {})


class UsageResource:
    def __init__(self, client: "TokenProxy") -> None:
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
