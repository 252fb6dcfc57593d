"""`extender` CLI: help, usage errors, one-line runtime errors, offline serving."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
from pathlib import Path

import aiohttp
import pytest
import yaml

from extender import cli
from tests.support import children
from tests.support import extender_objects as objects


def run(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    return int(exit_info.value.code or 0)


def test_help_explains_annotations(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    assert "require-alignment" in out and "--from-files" in out and "--weight-packing" in out


def test_unknown_flag_is_a_usage_error() -> None:
    assert run(["serve", "--no-such-flag"]) == 2


def test_bad_config_is_one_line_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("weights: {alignment: -1}\n")
    assert run(["serve", "--config", str(bad), "--from-files", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("extender: error: invalid setting weights.alignment")
    assert "\n" not in err


def test_missing_files_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["serve", "--from-files", str(tmp_path / "nope.yaml"), "--port", "0"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_unparseable_file_names_the_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Node\nmetadata: {name: [\n")
    assert run(["serve", "--from-files", str(bad), "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "bad.yaml" in err and "line 3, column 1" in err and "\n" not in err


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("just some text\n", "object 1 is str"),
        ("[1, 2]\n", "object 1 is list [1, 2]"),
        ("kind: Node\nmetadata: {labels: {a: b}}\n", "object 1 (Node) has no metadata.name"),
        ("{}\n", "object 1 has no kind"),
        ('{"kind": "Node", "metadata": {"name": "a"}}\n{"kind": ', "line 2, column 10"),
    ],
)
def test_files_that_hold_no_kubernetes_objects_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, says: str
) -> None:
    bad = tmp_path / "objects.json"
    bad.write_text(content)
    assert run(["serve", "--from-files", str(bad), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err


@pytest.mark.parametrize("flag", ["--port", "--admin-port"])
@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_out_of_range_is_refused_before_anything_listens(
    capsys: pytest.CaptureFixture[str], flag: str, port: str
) -> None:
    assert run(["serve", "--from-files", ".", flag, port]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and flag in err


async def test_serve_from_files_then_stop_on_sigterm(tmp_path: Path) -> None:
    fleet = objects.two_node_file(tmp_path / "fleet.yaml")
    async with children.extender_serving("--from-files", str(fleet)) as (proc, port):
        async with aiohttp.ClientSession() as s:
            async with s.get(f"http://127.0.0.1:{port}/readyz") as r:
                assert r.status == 200
            body = json.dumps({"Pod": objects.pod("ns", "p"), "NodeNames": ["n1", "n2"]})
            async with s.post(f"http://127.0.0.1:{port}/prioritize", data=body) as r:
                assert await r.json() == []  # no claims: every node alike, none listed
        proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            assert await proc.wait() == 0


def test_client_ca_without_a_server_certificate_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["serve", "--from-files", ".", "--client-ca", "ca.crt", "--port", "0"]) == 2
    assert "--client-ca needs --tls-cert" in capsys.readouterr().err


def test_cert_without_key_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["serve", "--from-files", ".", "--tls-cert", "x.crt", "--port", "0"]) == 2
    assert "--tls-key" in capsys.readouterr().err


async def test_busy_port_is_a_runtime_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = await children.extender_process(
            "serve", "--from-files", str(tmp_path), "--port", str(port)
        )
        _, err = await proc.communicate()
    assert proc.returncode == 1
    assert b"cannot listen" in err and b"Traceback" not in err


def test_fractional_capacity_is_read_from_the_cluster_unless_the_flag_the_env_or_the_config_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("EXTENDER_FRACTIONAL_CAPACITY", raising=False)

    def settings(*argv: str) -> bool | None:
        return cli.load_settings(cli.parser().parse_args(["serve", *argv])).fractional_capacity

    assert settings() is None  # left to the cluster's gate (extender.gates)
    assert settings("--fractional-capacity", "true") is True
    on = tmp_path / "c.yaml"
    on.write_text("fractional_capacity: true\n")
    assert settings("--config", str(on)) is True
    assert settings("--config", str(on), "--fractional-capacity", "false") is False
    monkeypatch.setenv("EXTENDER_FRACTIONAL_CAPACITY", "true")
    assert settings() is True
    monkeypatch.setenv("EXTENDER_FRACTIONAL_CAPACITY", "yes")
    assert run(["serve", "--from-files", str(tmp_path), "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "EXTENDER_FRACTIONAL_CAPACITY must be true or false, not 'yes'" in err
    assert "\n" not in err
    monkeypatch.delenv("EXTENDER_FRACTIONAL_CAPACITY")
    assert run(["serve", "--fractional-capacity", "maybe"]) == 2


async def test_port_0_is_logged_as_the_port_bound(tmp_path: Path) -> None:
    fleet = str(objects.two_node_file(tmp_path / "fleet.yaml"))
    proc = await children.extender_process(
        "serve", "--from-files", fleet, "--port", "0", "--admin-port", "0"
    )
    try:
        assert proc.stderr is not None
        logged = b""
        async with asyncio.timeout(30):
            while logged.count(b"on http://127.0.0.1:") < 2:
                line = await proc.stderr.readline()
                assert line, f"extender exited before serving: {logged!r}"
                logged += line
        main_port, admin_port = map(int, re.findall(rb"on http://127\.0\.0\.1:(\d+)", logged))
        assert main_port != 0 and admin_port != 0 and main_port != admin_port
        async with aiohttp.ClientSession() as s:
            async with s.get(f"http://127.0.0.1:{main_port}/readyz") as r:
                assert r.status == 200
            async with s.get(f"http://127.0.0.1:{admin_port}/metrics") as r:
                assert r.status == 200
    finally:
        await children.reap(proc)


async def test_a_silent_api_server_is_reported_while_the_extender_listens(
    tmp_path: Path,
) -> None:
    """An API server that accepts connections and never answers: the extender listens at
    once (/healthz answers, /readyz says what it waits for) and logs every attempt that got
    no answer within --request-timeout."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepted by the kernel, never answered
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "silent",
                        "cluster": {"server": f"http://127.0.0.1:{silent.getsockname()[1]}"},
                    }
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "silent", "context": {"cluster": "silent", "user": "u"}}],
                "current-context": "silent",
            }
        )
    )
    try:
        async with children.extender_serving(
            "--kubeconfig", str(kubeconfig), "--request-timeout", "1s", "--admin-port", "0"
        ) as (proc, port):
            assert proc.stderr is not None
            async with asyncio.timeout(30):
                while b"no answer within 1s" not in (line := await proc.stderr.readline()):
                    assert line, "extender exited"
            async with aiohttp.ClientSession() as s:
                async with s.get(f"http://127.0.0.1:{port}/healthz") as r:
                    assert r.status == 200
                async with s.get(f"http://127.0.0.1:{port}/readyz") as r:
                    why = await r.text()
                    assert r.status == 503 and "waiting for the API server" in why, why
    finally:
        silent.close()
