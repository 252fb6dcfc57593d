from testbed.kube.ratelimit import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_burst_is_free_then_requests_are_spaced_by_qps() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.delay() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.delay() == 0.1
    assert round(bucket.delay(), 6) == 0.2


def test_tokens_refill_with_time_up_to_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=10, burst=2, clock=clock)
    bucket.delay(), bucket.delay()
    clock.now = 100.0
    assert [bucket.delay() for _ in range(2)] == [0.0, 0.0]
    assert bucket.delay() > 0


def test_non_positive_qps_is_unlimited() -> None:
    bucket = TokenBucket(qps=0, burst=1)
    assert all(bucket.delay() == 0.0 for _ in range(1000))
