import json

from testbed.kube import errors


def status_body(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {"kind": "Status", "code": code, "reason": reason, "message": message}
    ).encode()


def test_statuses_map_to_named_errors() -> None:
    assert isinstance(errors.from_response(404, status_body(404, "NotFound", "x")), errors.NotFound)
    assert isinstance(errors.from_response(410, b""), errors.Gone)
    assert isinstance(errors.from_response(422, b"{}"), errors.Invalid)
    assert isinstance(errors.from_response(503, b"down"), errors.ServerError)
    assert type(errors.from_response(418, b"")) is errors.KubeError


def test_already_exists_is_a_conflict_with_its_own_type() -> None:
    err = errors.from_response(409, status_body(409, "AlreadyExists", 'nodes "n" already exists'))
    assert isinstance(err, errors.AlreadyExists) and isinstance(err, errors.Conflict)
    assert str(err) == 'nodes "n" already exists'
    assert not isinstance(
        errors.from_response(409, status_body(409, "Conflict", "")), errors.AlreadyExists
    )


def test_too_many_requests_carries_retry_after() -> None:
    err = errors.from_response(429, b"", retry_after="2")
    assert isinstance(err, errors.TooManyRequests) and err.retry_after == 2.0
    assert errors.is_retriable(err)
    assert not errors.is_retriable(errors.from_response(404, b""))


def test_watch_error_events_become_errors() -> None:
    err = errors.from_status_object(
        {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    )
    assert isinstance(err, errors.Gone)
    assert str(err) == "too old"
