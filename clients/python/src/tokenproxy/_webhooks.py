import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from typing import Any, Mapping, Optional, Union

from ._errors import WebhookVerificationError
from ._models import Event, from_json

DEFAULT_TOLERANCE_SECONDS = 5 * 60


def verify_webhook(
    payload: Union[str, bytes],
    headers: Mapping[str, Any],
    secret: str,
    *,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    now: Optional[float] = None,
) -> Event:
    """Checks a webhook delivery (Standard Webhooks) and returns its event, like ``events.list()``.

    ``payload`` must be the raw request body exactly as received; ``headers`` any mapping (a dict,
    ``http.client.HTTPMessage``, a framework's headers), looked up case-insensitively. Raises
    :class:`WebhookVerificationError` on any mismatch.
    """
    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if msg_id is None or timestamp is None or signatures is None:
        raise WebhookVerificationError(
            "Missing webhook-id, webhook-timestamp or webhook-signature header."
        )
    if not re.fullmatch(r"\d{1,15}", timestamp):
        raise WebhookVerificationError("Invalid webhook-timestamp header.")
    current = int(time.time() if now is None else now)
    sent_at = int(timestamp)
    # Both ways: an old delivery may be a replay, one from the future a forged or badly clocked one.
    if sent_at < current - tolerance:
        raise WebhookVerificationError("The webhook timestamp is too old.")
    if sent_at > current + tolerance:
        raise WebhookVerificationError("The webhook timestamp is in the future.")

    body = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
    signed = f"{msg_id}.{timestamp}.".encode("utf-8") + body
    expected = hmac.new(_secret_bytes(secret), signed, hashlib.sha256).digest()
    # Several signatures are allowed (a secret being rotated); one valid v1 signature is enough.
    for entry in signatures.split(" "):
        version, _, value = entry.partition(",")
        if version != "v1" or not value:
            continue
        try:
            given = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(given, expected):
            break
    else:
        raise WebhookVerificationError("No matching webhook signature.")

    try:
        event = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise WebhookVerificationError("The webhook payload is not JSON.") from err
    if not isinstance(event, dict):
        raise WebhookVerificationError("The webhook payload is not a JSON object.")
    return from_json(Event, event)


def _secret_bytes(secret: str) -> bytes:
    encoded = secret[len("whsec_"):] if secret.startswith("whsec_") else secret
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as err:
        raise WebhookVerificationError("The webhook secret is not base64.") from err
    if not key:
        raise WebhookVerificationError("The webhook secret is empty.")
    return key


def _header(headers: Mapping[str, Any], name: str) -> Optional[str]:
    for key, value in headers.items():
        if key.lower() != name:
            continue
        if isinstance(value, (list, tuple)):
            return " ".join(str(v) for v in value)
        return str(value)
    return None
