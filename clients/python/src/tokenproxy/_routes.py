"""Every library method and the one REST endpoint it calls (1:1).

Methods look their endpoint up here, and the repository's coverage test compares this table with
the server's OpenAPI document, so an endpoint without a method (or the reverse) fails the build.
"""

from typing import Dict, Tuple

ROUTES: Dict[str, Tuple[str, str]] = {
    "tokens.create": ("POST", "/tokens"),
    "tokens.list": ("GET", "/tokens"),
    "tokens.get": ("GET", "/tokens/:id"),
    "tokens.revoke": ("DELETE", "/tokens/:id"),
    "tokens.update": ("PATCH", "/tokens/:id"),
    "tokens.revoke_all": ("POST", "/tokens/revoke_all"),
    "keys.create": ("POST", "/keys"),
    "keys.list": ("GET", "/keys"),
    "keys.get": ("GET", "/keys/:id"),
    "keys.rotate": ("POST", "/keys/:id/rotate"),
    "keys.delete": ("DELETE", "/keys/:id"),
    "webhooks.create": ("POST", "/webhooks"),
    "webhooks.list": ("GET", "/webhooks"),
    "webhooks.get": ("GET", "/webhooks/:id"),
    "webhooks.delete": ("DELETE", "/webhooks/:id"),
    "webhooks.deliveries": ("GET", "/webhooks/:id/deliveries"),
    "webhooks.update": ("PATCH", "/webhooks/:id"),
    "webhooks.test": ("POST", "/webhooks/:id/test"),
    "events.list": ("GET", "/events"),
    "events.redeliver": ("POST", "/events/:id/redeliver"),
    "anomalies.list": ("GET", "/anomalies"),
    "logs.list": ("GET", "/logs"),
    "logs.get": ("GET", "/logs/:id"),
    "account.get": ("GET", "/account"),
    "account.update": ("PATCH", "/account"),
    "providers.list": ("GET", "/providers"),
    "usage.get": ("GET", "/usage"),
    "api_keys.create": ("POST", "/api_keys"),
    "api_keys.list": ("GET", "/api_keys"),
    "api_keys.delete": ("DELETE", "/api_keys/:id"),
    "audit.list": ("GET", "/audit"),
}

# The one naming exception, as in the Node.js library: the field that identifies an object itself
# is `id` (token.id). Everything else keeps the API's snake_case names.
ID_FIELDS: Dict[str, str] = {
    "tokens": "token_id",
    "keys": "key_id",
    "webhooks": "webhook_id",
    "anomalies": "anomaly_id",
    "deliveries": "delivery_id",
    "account": "account_id",
}
