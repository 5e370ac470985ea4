"""Requests and error responses on the wire: URLs, query values, JSON bodies, API error bodies."""

import json
import urllib.parse
from datetime import datetime
from typing import Any, Dict, Mapping, Optional

from ._errors import TokenProxyError, error_for_status
from ._models import RateLimit


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


def _parse_json(status: int, headers: Dict[str, str], raw: bytes) -> Any:
    # Undecodable bytes become U+FFFD, as Node's toString('utf8') makes them, in _to_error too.
    try:
        return json.loads(raw.decode("utf-8", "replace"))
    except ValueError as err:
        raise TokenProxyError(
            f"The API answered {status} with a body that is not JSON.",
            code="invalid_response",
            status=status,
            request_id=headers.get("x-request-id"),
            headers=headers,
        ) from err


def _to_error(status: int, headers: Dict[str, str], raw: bytes) -> TokenProxyError:
    """As the Node client's toError: a field the body lacks, or a body that is not JSON (a load
    balancer's HTML 502), falls back to what the status and headers say."""
    error: Dict[str, Any] = {}
    try:
        body = json.loads(raw.decode("utf-8", "replace"))
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
    except ValueError:
        pass

    def text(key: str) -> Optional[str]:
        value = error.get(key)
        return value if isinstance(value, str) else None

    # `is None`, not `or`, as the Node client's `??`: an empty string the body sends is kept.
    message, code, request_id = text("message"), text("code"), text("request_id")
    return error_for_status(
        status,
        f"The API answered with status {status}." if message is None else message,
        code=f"http_{status}" if code is None else code,
        type=text("type"),
        param=text("param"),
        request_id=headers.get("x-request-id") if request_id is None else request_id,
        headers=headers,
    )
