from typing import Dict, Optional


class TokenProxyError(Exception):
    """Base of every error a call raises. Match on ``code`` (stable); ``message`` may change."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: Optional[int] = None,
        type: Optional[str] = None,
        param: Optional[str] = None,
        request_id: Optional[str] = None,
        headers: Optional[Dict[str, str]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        #: HTTP status; None when no response arrived.
        self.status = status
        self.type = type
        #: The request field at fault, as the API names it (``allowed_hosts[1]``).
        self.param = param
        #: Quote it in a bug report: it finds the server's log line.
        self.request_id = request_id
        self.headers: Dict[str, str] = headers or {}

    def __str__(self) -> str:
        extra = f" (request {self.request_id})" if self.request_id else ""
        status = f"{self.status} " if self.status is not None else ""
        return f"{status}{self.code}: {self.message}{extra}"


class InvalidRequestError(TokenProxyError):
    """400, 413, 415."""


class AuthenticationError(TokenProxyError):
    """401: missing or wrong API key."""


class PermissionDeniedError(TokenProxyError):
    """403."""


class PlanLimitError(PermissionDeniedError):
    """403 ``plan_limit_exceeded``."""


class NotFoundError(TokenProxyError):
    """404."""


class ConflictError(TokenProxyError):
    """409: ``key_deleted``, ``token_not_active``, ``webhook_disabled``, ``idempotency_conflict``,
    ``idempotency_in_progress``."""


class RateLimitError(TokenProxyError):
    """429, after the client's own retries."""


class InternalServerError(TokenProxyError):
    """5xx, after the client's own retries."""


class APIConnectionError(TokenProxyError):
    """No HTTP response: DNS, refused or reset connection, TLS failure."""


class APITimeoutError(APIConnectionError):
    """No complete response within ``timeout``."""


class APICertificateError(APIConnectionError):
    """The server's TLS certificate was refused: ``certificate_untrusted`` (no trusted CA signed it,
    such as tokenproxy's generated self-signed certificate) or ``certificate_invalid`` (wrong host
    name, expired). Never retried: the next attempt would be refused the same way."""


class WebhookVerificationError(Exception):
    """The signature, timestamp or headers of a webhook delivery do not check out."""


def error_for_status(
    status: int,
    message: str,
    *,
    code: str,
    type: Optional[str] = None,
    param: Optional[str] = None,
    request_id: Optional[str] = None,
    headers: Optional[Dict[str, str]] = None,
) -> TokenProxyError:
    """The exception for an HTTP error response, by status family."""
    cls: "type[TokenProxyError]"
    if status == 401:
        cls = AuthenticationError
    elif status == 403:
        plan = code == "plan_limit_exceeded" or type == "plan_limit"
        cls = PlanLimitError if plan else PermissionDeniedError
    elif status == 404:
        cls = NotFoundError
    elif status == 409:
        cls = ConflictError
    elif status == 429:
        cls = RateLimitError
    elif status >= 500:
        cls = InternalServerError
    elif status >= 400:
        cls = InvalidRequestError
    else:
        cls = TokenProxyError
    return cls(
        message,
        code=code,
        status=status,
        type=type,
        param=param,
        request_id=request_id,
        headers=headers,
    )
