"""A headless Chromium driven over the Chrome DevTools protocol (aiohttp's websocket client):
load a page, collect its console errors and uncaught exceptions, evaluate an expression,
take a screenshot. Only what the report tests need."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# Generous: the test machines are shared and a cold Chromium takes seconds to start.
_TIMEOUT = 90.0


def find_browser() -> str | None:
    return next((p for b in BROWSERS if (p := shutil.which(b))), None)


@dataclass
class Page:
    ws: aiohttp.ClientWebSocketResponse
    errors: list[str] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _events: dict[str, asyncio.Event] = field(default_factory=dict)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        n = next(self._ids)
        await self.ws.send_json({"id": n, "method": method, "params": params})
        while True:
            msg = await self.ws.receive_json()
            if msg.get("id") == n:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result
            self._on_event(msg)

    def _on_event(self, msg: dict[str, Any]) -> None:
        method, p = msg.get("method", ""), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            self.errors.append(d.get("exception", {}).get("description") or d.get("text", ""))
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append(
                " ".join(str(a.get("value", a.get("description"))) for a in p["args"])
            )
        elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
            self.errors.append(p["entry"].get("text", ""))
        if method in self._events:
            self._events[method].set()

    async def wait_for(self, event: str) -> None:
        self._events[event] = asyncio.Event()
        while not self._events[event].is_set():
            self._on_event(await self.ws.receive_json())

    async def open(self, url: str) -> None:
        """Navigate and wait for the load event (the page's scripts have run by then)."""
        async with asyncio.timeout(_TIMEOUT):
            await self.call("Page.navigate", url=url)
            await self.wait_for("Page.loadEventFired")

    async def evaluate(self, expression: str) -> Any:
        r = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    async def screenshot(
        self, path: Path, clip: tuple[float, float, float, float] | None = None
    ) -> Path:
        """The whole page, or the (x, y, width, height) region of it, as a PNG file."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if clip is not None:
            x, y, w, h = clip
            params["clip"] = {"x": x, "y": y, "width": w, "height": h, "scale": 1}
        r = await self.call("Page.captureScreenshot", **params)
        await asyncio.to_thread(path.write_bytes, base64.b64decode(r["data"]))
        return path


def _read_port(marker: Path) -> int | None:
    text = marker.read_text() if marker.exists() else ""
    return int(text.split()[0]) if text.strip() else None


async def _devtools_port(profile: Path, proc: asyncio.subprocess.Process) -> int:
    # Chromium writes the port it chose (--remote-debugging-port=0) into the profile.
    async with asyncio.timeout(_TIMEOUT):
        while (port := await asyncio.to_thread(_read_port, profile / "DevToolsActivePort")) is None:
            if proc.returncode is not None:
                raise RuntimeError(f"the browser exited with {proc.returncode}")
            await asyncio.sleep(0.1)
    return port


@asynccontextmanager
async def browser(binary: str, width: int = 1200, height: int = 900) -> AsyncIterator[Page]:
    """A fresh headless browser and one blank tab, with console errors collected."""
    # Chromium's helper processes can outlive a test by a moment: its own process group is
    # ended as a whole, and a file one of them writes while the profile goes is no failure.
    with tempfile.TemporaryDirectory(prefix="cdp-", ignore_cleanup_errors=True) as tmp:
        profile = Path(tmp)
        proc = await asyncio.create_subprocess_exec(
            binary,
            "--headless",
            "--no-sandbox",  # CI and containers run as root
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            f"--window-size={width},{height}",
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            "about:blank",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            port = await _devtools_port(profile, proc)
            async with aiohttp.ClientSession() as http:
                async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
                    targets = json.loads(await r.text())
                tab = next(t for t in targets if t["type"] == "page")
                async with http.ws_connect(tab["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                    page = Page(ws)
                    for domain in ("Page", "Runtime", "Log"):
                        await page.call(f"{domain}.enable")
                    yield page
        finally:
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                async with asyncio.timeout(10):
                    await proc.wait()
            except TimeoutError:
                _signal_group(proc.pid, signal.SIGKILL)
                await proc.wait()


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """The browser's process group (its leader is the browser this module started)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)
