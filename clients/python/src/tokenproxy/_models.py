"""Objects of the management API as dataclasses: the API's snake_case names, and an object's own
id as ``id`` (``token.id`` is the token_id). Timestamps are ISO 8601 UTC strings, as sent.

Fields the server adds later are ignored rather than failing, so an older library keeps working
against a newer server.
"""

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Type, TypeVar

T = TypeVar("T")


def from_json(cls: Type[T], data: Mapping[str, Any], id_field: Optional[str] = None) -> T:
    """Builds dataclass ``cls`` from an API object; nested dataclasses come from ``_nested``."""
    values: Dict[str, Any] = dict(data)
    if id_field is not None and id_field in values:
        values["id"] = values.pop(id_field)
    nested: Dict[str, Any] = getattr(cls, "_nested", {})
    kwargs: Dict[str, Any] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        value = values.get(field.name)
        if field.name in nested and isinstance(value, Mapping):
            value = from_json(nested[field.name], value)
        kwargs[field.name] = value
    return cls(**kwargs)


@dataclass(frozen=True)
class RateLimit:
    requests: int
    #: A count and a unit: ``30s``, ``1m``, ``1h``, ``1d``.
    window: str


@dataclass(frozen=True)
class Budget:
    """A spend cap: exactly one of ``amount_usd`` and ``tokens``, per ``day``, ``month`` or ``total``."""

    period: str
    amount_usd: Optional[float] = None
    #: Input plus output tokens.
    tokens: Optional[int] = None


@dataclass(frozen=True)
class Token:
    #: The token_id (not secret).
    id: str
    name: str
    target_provider: str
    #: Id of the key resource holding the real key.
    real_key_ref: str
    authorized_origins: List[str]
    authorized_ips: List[str]
    rate_limit: Optional[RateLimit]
    #: ``active``, ``revoked`` or ``expired``.
    status: str
    created_at: str
    last_used_at: Optional[str]
    expires_at: Optional[str]
    revoked_at: Optional[str]
    request_count: int
    sanitized_key_hint: str
    #: Base URL for provider SDKs (OpenAI: ``proxy_base_url + "/v1"``).
    proxy_base_url: str
    #: The token's budget, or ``None`` (also from servers older than budgets).
    budget: Optional[Budget]

    _nested = {"rate_limit": RateLimit, "budget": Budget}


@dataclass(frozen=True)
class CreatedToken(Token):
    #: The sanitized token ``svc_hb_…``; returned only by ``tokens.create``.
    sanitized_key: str

    def __repr__(self) -> str:
        # Keeps the secret out of logs and tracebacks that print the object.
        return f"CreatedToken(id={self.id!r}, name={self.name!r}, sanitized_key='svc_hb_…')"


@dataclass(frozen=True)
class Key:
    id: str
    name: str
    provider: str
    #: Last 4 characters of the real key ("" for keys under 12 characters).
    hint: str
    created_at: str
    rotated_at: Optional[str]
    deleted_at: Optional[str]
    token_count: int


@dataclass(frozen=True)
class AccountLimits:
    active_tokens: Optional[int]
    requests_per_month: Optional[int]


@dataclass(frozen=True)
class AccountUsage:
    period_start: str
    requests: int
    active_tokens: int


@dataclass(frozen=True)
class AccountRetention:
    #: The server's ``log_retention``: ``"30d"``, or ``"forever"``.
    logs: str
    #: The server's ``rollup_retention``.
    rollups: str


@dataclass(frozen=True)
class Account:
    id: str
    name: str
    plan: str
    limits: AccountLimits
    usage: AccountUsage
    alert_email: Optional[str]
    created_at: str
    #: The budget over all the account's tokens, or ``None``.
    budget: Optional[Budget] = None

    retention: Optional[AccountRetention] = None

    _nested = {
        "limits": AccountLimits,
        "usage": AccountUsage,
        "budget": Budget,
        "retention": AccountRetention,
    }


@dataclass(frozen=True)
class Provider:
    id: str
    base_url: str
    #: ``bearer`` or ``header:<name>``.
    auth: str
    builtin: bool
    proxy_base_url: str


@dataclass(frozen=True)
class Webhook:
    id: str
    url: str
    #: Event types, or ``["*"]`` for all.
    events: List[str]
    created_at: str
    #: Set when tokenproxy stopped delivering to it (deliveries failed for too long).
    disabled_at: Optional[str]
    disabled_reason: Optional[str]
    #: First failed attempt since the last successful delivery; None while healthy.
    failing_since: Optional[str]


@dataclass(frozen=True)
class CreatedWebhook(Webhook):
    #: ``whsec_…`` for :func:`verify_webhook`; returned only by ``webhooks.create``.
    secret: str

    def __repr__(self) -> str:
        return f"CreatedWebhook(id={self.id!r}, url={self.url!r}, secret='whsec_…')"


@dataclass(frozen=True)
class Event:
    #: ``evt_…``, also the ``webhook-id`` of its deliveries.
    id: str
    type: str
    created_at: str
    #: The event's data as sent (snake_case).
    data: Dict[str, Any]


@dataclass(frozen=True)
class Anomaly:
    id: str
    timestamp: str
    token_id: str
    origin: Optional[str]
    ip: str
    country: Optional[str]
    path: str
    reason: str
    kind: str
    #: What an anomaly of authorized use measured; None for breaches.
    details: Optional[Dict[str, Any]] = None


@dataclass(frozen=True)
class RequestLog:
    #: The proxied request's id (``x-tokenproxy-request-id``).
    request_id: str
    timestamp: str
    token_id: Optional[str]
    origin: Optional[str]
    ip: str
    country: Optional[str]
    pop: str
    path: str
    status: int
    authorized: bool
    latency_ms: int
    #: The proxy's own error code when it refused or failed the request; ``None`` when forwarded
    #: (and from servers older than this field).
    error_code: Optional[str] = None
    #: Usage the provider reported and its cost in micro-USD; ``None`` when unknown.
    model: Optional[str] = None
    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    cost_micros: Optional[int] = None


@dataclass(frozen=True)
class Delivery:
    """One delivery of an event to a webhook endpoint."""

    id: str
    event_id: str
    event_type: str
    #: ``pending``, ``delivered`` or ``failed``.
    status: str
    attempts: int
    last_error: Optional[str]
    created_at: str
    completed_at: Optional[str]
    #: Each attempt, oldest first, as dicts with ``attempt``, ``attempted_at``, ``status_code``,
    #: ``duration_ms`` and ``error_class`` (None on success). Never a response body.
    attempt_log: Optional[List[Dict[str, Any]]] = None


@dataclass(frozen=True)
class WebhookTest:
    """What POST /v1/webhooks/:id/test queued: the ``ping`` event and its delivery."""

    event_id: str
    delivery_id: str


@dataclass(frozen=True)
class Redelivery:
    """What POST /v1/events/:id/redeliver queued: one delivery per endpoint (dicts with
    ``delivery_id`` and ``webhook_id``)."""

    event_id: str
    deliveries: List[Dict[str, str]]


@dataclass(frozen=True)
class UsageBucket:
    start: str
    forwarded: int
    refused: int


@dataclass(frozen=True)
class Usage:
    """Forwarded and refused requests over a window (GET /v1/usage), from per-hour counts."""

    window: str
    bucket: str
    start: str
    end: str
    forwarded: int
    refused: int
    #: Refusals by reason: ``origin_or_ip_not_allowed``, ``ip_backoff``, ``rate_or_quota_limit``, ``budget_exceeded``, …
    refused_by_reason: Dict[str, int]
    #: Oldest first, one per bucket, empty buckets included.
    buckets: List[UsageBucket]
    #: Provider tokens and cost in the window: totals, ``by_token``, ``by_model`` and ``buckets``.
    spend: Optional[Dict[str, Any]] = None
    #: Spend against the account's and each token's budget in its current period.
    budgets: Optional[List[Dict[str, Any]]] = None
