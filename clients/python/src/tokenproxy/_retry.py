"""When to retry an error response, and how long to wait first."""

import random
from typing import Dict, Optional

from ._errors import TokenProxyError

INITIAL_BACKOFF = 0.5
MAX_BACKOFF = 8.0
#: A Retry-After longer than this is not waited for: the error goes to the caller instead.
MAX_RETRY_AFTER = 60.0


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
