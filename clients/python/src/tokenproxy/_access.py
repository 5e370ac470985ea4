"""API keys and the audit log of the account (who may act on it, and what they did)."""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ._pagination import Page

if TYPE_CHECKING:
    from ._client import TokenProxy


@dataclass(frozen=True)
class ApiKey:
    #: ``ak_…``
    id: str
    name: str
    #: ``full``, or ``read`` (every write answers 403 ``insufficient_scope``).
    scope: str
    #: The first characters of the key, to tell keys apart.
    start: str
    created_at: str


@dataclass(frozen=True)
class CreatedApiKey(ApiKey):
    #: ``svc_sk_…``: returned only by ``api_keys.create``; only its digest is stored.
    api_key: str

    def __repr__(self) -> str:
        return f"CreatedApiKey(id={self.id!r}, name={self.name!r}, scope={self.scope!r}, api_key='svc_sk_…')"


@dataclass(frozen=True)
class AuditActor:
    #: ``api_key``, ``session`` or ``cli``.
    type: str
    #: The API key's id for ``api_key``; None otherwise.
    id: Optional[str]
    #: The API key's name, ``dashboard session`` or ``cli``.
    name: str


@dataclass(frozen=True)
class AuditEntry:
    #: ``aud_…``
    id: str
    #: ``token.created``, ``key.rotated``, ``account.plan_changed``, …
    action: str
    object_id: Optional[str]
    actor: AuditActor
    #: The client's address; None for the CLI.
    ip: Optional[str]
    created_at: str

    _nested = {"actor": AuditActor}


class ApiKeys:
    def __init__(self, client: "TokenProxy") -> None:
        self._client = client

    def create(
        self, *, name: str, scope: Optional[str] = None, idempotency_key: Optional[str] = None
    ) -> CreatedApiKey:
        """POST /v1/api_keys. ``scope``: ``full`` (default) or ``read``. The key is shown only here."""
        body = {"name": name} if scope is None else {"name": name, "scope": scope}
        return self._client._one("api_keys.create", CreatedApiKey, body=body, idempotency_key=idempotency_key)

    def list(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page[ApiKey]:
        """GET /v1/api_keys: the account's live keys, newest first."""
        return self._client._list("api_keys.list", ApiKey, {"limit": limit, "cursor": cursor})

    def delete(self, id: str, *, idempotency_key: Optional[str] = None) -> ApiKey:
        """DELETE /v1/api_keys/:id. The key stops working at once."""
        return self._client._one("api_keys.delete", ApiKey, id=id, idempotency_key=idempotency_key)


class Audit:
    def __init__(self, client: "TokenProxy") -> None:
        self._client = client

    def list(
        self,
        *,
        action: Optional[str] = None,
        object_id: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Page[AuditEntry]:
        """GET /v1/audit: every change to the account, newest first."""
        query = {"action": action, "object_id": object_id, "limit": limit, "cursor": cursor}
        return self._client._list("audit.list", AuditEntry, query)
