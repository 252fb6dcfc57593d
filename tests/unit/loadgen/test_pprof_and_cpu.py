"""The pprof decoder and the CPU categories, on profiles built here byte by byte (the format
of profile.proto) and on names as Go writes them."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from loadgen import cli, cpu, pprof
from tests.support.pprof_bytes import encode

REQUEUE = [
    "k8s.io/dynamic-resource-allocation/cel.(*CompilationResult).DeviceMatches",
    "k8s.io/kubernetes/pkg/scheduler/backend/queue.(*PriorityQueue).isPodWorthRequeuing",
    "k8s.io/kubernetes/pkg/scheduler.(*Scheduler).addAllEventHandlers.func1",
    "runtime.goexit",
]
FILTER_CEL = [
    "github.com/google/cel-go/interpreter.(*evalAnd).Eval",
    "k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources.(*DynamicResources).Filter",
    "k8s.io/kubernetes/pkg/scheduler.(*Scheduler).schedulingCycle",
]
GC = ["runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"]
UNKNOWN = ["example.com/mystery.work", "runtime.goexit"]


def test_a_profile_decodes_to_its_stacks_and_cpu_time() -> None:
    p = pprof.decode(encode([(REQUEUE, 30_000_000), (GC, 10_000_000)], duration_ns=5 * 10**9))
    assert p.sample_type == "cpu" and p.unit == "nanoseconds"
    assert p.duration_seconds == 5.0
    assert p.stacks == [(tuple(REQUEUE), 30_000_000), (tuple(GC), 10_000_000)]
    assert p.total == 40_000_000


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "empty profile"),
        (b"\x1f\x8b\x08\x00garbage", "not a gzip-compressed profile"),
        (gzip.compress(b"\xff\xff\xff"), "not a pprof profile"),
        (gzip.compress(b"plain text, not protobuf"), "not a pprof profile"),
    ],
)
def test_an_unreadable_profile_is_one_profile_error(data: bytes, says: str) -> None:
    with pytest.raises(pprof.ProfileError) as e:
        pprof.decode(data)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_truncated_profile_is_refused() -> None:
    raw = gzip.decompress(encode([(REQUEUE, 10_000_000)]))
    with pytest.raises(pprof.ProfileError):
        pprof.decode(raw[: len(raw) // 2])


def test_requeueing_counts_as_queue_even_when_it_runs_cel() -> None:
    assert cpu.categorize(tuple(REQUEUE)) == cpu.QUEUE


def test_cel_inside_the_dra_filter_counts_as_cel() -> None:
    assert cpu.categorize(tuple(FILTER_CEL)) == cpu.CEL
    assert cpu.categorize(tuple(FILTER_CEL[1:])) == cpu.DRA


def test_gc_and_unknown_code() -> None:
    assert cpu.categorize(tuple(GC)) == cpu.RUNTIME
    # goexit roots every goroutine: it must not make everything "runtime".
    assert cpu.categorize(tuple(UNKNOWN)) == cpu.OTHER


# Stacks a short demo arm's kube-scheduler profile left in "other" before these rules
# (2026-11-27, 1.37.2), and an API server's request: the request stays the API server's.
EVENTS = ["k8s.io/client-go/tools/events.(*recorderImpl).eventf.func1"]
HTTP2_CLIENT = [
    "golang.org/x/net/http2.(*clientStream).cleanupWriteRequest",
    "golang.org/x/net/http2.(*clientStream).doRequest",
]
SCRAPE_HANDSHAKE = [
    "crypto/internal/fips140/bigmod.addMulVVW1024",
    "crypto/rsa.SignPSS",
    "crypto/tls.(*serverHandshakeStateTLS13).handshake",
    "crypto/tls.(*Conn).serverHandshake",
    "net/http.(*conn).serve",
]
API_REQUEST = [
    "k8s.io/apiserver/pkg/endpoints/handlers.CreateResource.func1",
    "golang.org/x/net/http2.(*serverConn).runHandler",
]


@pytest.mark.parametrize(
    ("stack", "category"),
    [
        (EVENTS, cpu.API),
        (HTTP2_CLIENT, cpu.API),
        (SCRAPE_HANDSHAKE, cpu.CONNECTIONS),
        (API_REQUEST, cpu.APISERVER),
    ],
)
def test_a_connection_s_work_is_named(stack: list[str], category: str) -> None:
    assert cpu.categorize(tuple(stack)) == category


def test_the_breakdown_sums_slices_and_names_the_uncategorized() -> None:
    a = pprof.decode(encode([(REQUEUE, 60_000_000), (UNKNOWN, 20_000_000)]))
    b = pprof.decode(encode([(FILTER_CEL, 20_000_000)]))
    bd = cpu.breakdown([a, b])
    assert bd.total == 100_000_000 and bd.seconds_profiled == 2.0
    shares = bd.shares()
    assert shares[cpu.QUEUE] == pytest.approx(0.6)
    assert shares[cpu.CEL] == pytest.approx(0.2)
    assert bd.coverage == pytest.approx(0.8)
    assert bd.signature_shares()["isPodWorthRequeuing"] == pytest.approx(0.6)
    assert bd.top_other == [("example.com/mystery.work", 20_000_000)]
    assert set(shares) == set(cpu.CATEGORIES)


@pytest.mark.parametrize("content", [b"", b"garbage", gzip.compress(b"\xff\xff")])
def test_loadgen_cpu_says_what_is_wrong_with_a_file_in_one_line(
    content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.pb.gz"
    bad.write_bytes(content)
    with pytest.raises(SystemExit) as e:
        cli.main(["cpu", str(bad)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"loadgen: error: {bad}: ") and err.count("\n") == 1


def test_loadgen_cpu_prints_the_categories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "scheduler-000.pb.gz"
    good.write_bytes(encode([(REQUEUE, 30_000_000), (UNKNOWN, 10_000_000)]))
    with pytest.raises(SystemExit) as e:
        cli.main(["cpu", str(good)])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "queue and requeue" in out and "75.0 %" in out
    assert "uncategorized: example.com/mystery.work" in out
