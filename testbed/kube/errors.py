"""One error tree for API failures, mapped from HTTP statuses (as kopf does)."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any


class KubeError(Exception):
    """Any failure talking to the API server."""

    status: int = 0

    def __init__(self, message: str, *, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status or type(self).status
        self.reason = reason


class Unreachable(KubeError):
    """No HTTP answer at all: connection refused, DNS, TLS or a timeout."""


class ConfigError(KubeError):
    """No usable kubeconfig, context or in-cluster configuration."""


class BadRequest(KubeError):
    status = 400


class Unauthorized(KubeError):
    status = 401


class Forbidden(KubeError):
    status = 403


class NotFound(KubeError):
    status = 404


class Conflict(KubeError):
    """409: a stale resourceVersion on update."""

    status = 409


class AlreadyExists(Conflict):
    """409 with reason AlreadyExists: a create of a name that is taken."""


class Gone(KubeError):
    """410: the watch's resourceVersion is too old; relist."""

    status = 410


class Invalid(KubeError):
    """422: the object failed validation; the message names the field."""

    status = 422


class TooManyRequests(KubeError):
    status = 429

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ServerError(KubeError):
    status = 500


_BY_STATUS: dict[int, type[KubeError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


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
