"""One error tree for API failures, mapped from HTTP statuses (as kopf does)."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

# The named error of each HTTP status, filled in by the classes below as they are declared.
_BY_STATUS: dict[int, type[KubeError]] = {}


class KubeError(Exception):
    """Any failure talking to the API server."""

    status: int = 0

    def __init__(self, message: str, *, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status or type(self).status
        self.reason = reason

    def __init_subclass__(cls, *, status: int = 0, **kw: Any) -> None:
        """`class NotFound(KubeError, status=404)` names the error of an HTTP status, in one
        place: the class and the status-to-class table."""
        super().__init_subclass__(**kw)
        if status:
            cls.status = status
            _BY_STATUS[status] = cls


class Unreachable(KubeError):
    """No HTTP answer at all: connection refused, DNS, TLS or a timeout."""


class ConfigError(KubeError):
    """No usable kubeconfig, context or in-cluster configuration."""


class BadRequest(KubeError, status=400):
    """400: a malformed request."""


class Unauthorized(KubeError, status=401):
    """401: no or bad credentials."""


class Forbidden(KubeError, status=403):
    """403: the credentials may not do this."""


class NotFound(KubeError, status=404):
    """404: no such object (or no such kind)."""


class Conflict(KubeError, status=409):
    """409: a stale resourceVersion on update."""


class AlreadyExists(Conflict):
    """409 with reason AlreadyExists: a create of a name that is taken."""


class Gone(KubeError, status=410):
    """410: the watch's resourceVersion is too old; relist."""


class Invalid(KubeError, status=422):
    """422: the object failed validation; the message names the field."""


class TooManyRequests(KubeError, status=429):
    """429: throttled; `retry_after` is the server's Retry-After in seconds, if it sent one."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ServerError(KubeError, status=500):
    """5xx: the server failed; worth retrying."""


def from_response(status: int, body: bytes | str, retry_after: str | None = None) -> KubeError:
    """The named error for an HTTP status and its `Status` body."""
    message, reason = _status_message(body)
    if not message:  # e.g. a proxy's bare 404: say what came back instead of nothing
        message = f"HTTP {status} {_phrase(status)} with an empty body"
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExists(message, status=status, reason=reason)
    if status == 429:
        return TooManyRequests(
            message, status=status, reason=reason, retry_after=_seconds(retry_after)
        )
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else KubeError)
    return cls(message, status=status, reason=reason)


def from_status_object(obj: dict[str, Any]) -> KubeError:
    """The error carried by a watch ERROR event (a metav1.Status)."""
    code = int(obj.get("code") or 500)
    return from_response(code, json.dumps(obj))


def is_retriable(err: BaseException) -> bool:
    """Worth retrying with backoff: throttling, server trouble, no answer."""
    return isinstance(err, TooManyRequests | ServerError | Unreachable)


def _status_message(body: bytes | str) -> tuple[str, str]:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        obj = json.loads(text)
    except ValueError:
        return text.strip()[:300], ""
    if not isinstance(obj, dict):
        return text.strip()[:300], ""
    return str(obj.get("message") or text[:300]), str(obj.get("reason") or "")


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None
