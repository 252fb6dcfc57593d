"""One shared API client per process: configuration, rate limits, retries, raw JSON.

kubernetes-asyncio's ApiClient configures auth, TLS and the connection pool; requests go out
on a session of our own over that pool, and bodies are decoded here as plain dicts.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import random
import ssl
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlencode

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from pydantic_core import from_json
from yarl import URL

from testbed.kube import errors
from testbed.kube import kubeconfig as kubeconfig_file
from testbed.kube.ratelimit import TokenBucket
from testbed.kube.resources import Resource, resource_of

log = logging.getLogger(__name__)

PatchType = Literal["merge", "strategic", "json", "apply"]
_PATCH_CONTENT_TYPES: dict[PatchType, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}

# verb, resource plural (never an object name: low-cardinality labels), HTTP status
# (0 = no answer), seconds
RequestObserver = Callable[[str, str, int, float], None]


@dataclass(frozen=True, kw_only=True)
class ClientSettings:
    qps: float = 100.0
    """Client-side requests per second (token bucket); <= 0 disables the limit."""
    burst: int = 200
    """Requests allowed at once before the QPS limit applies."""
    max_retries: int = 6
    """Retries of a request that failed with 429, 5xx or no answer."""
    backoff_base: float = 0.1
    """First retry delay in seconds; doubles each retry, with full jitter."""
    backoff_max: float = 5.0
    """Upper bound of one retry delay in seconds."""
    request_timeout: float = 60.0
    """Total timeout of one non-watch request in seconds."""
    pool_size: int = 100
    """Concurrent connections to the API server."""
    user_agent: str = "dra-testbed"


@dataclass(slots=True)
class ObjectList:
    items: list[dict[str, Any]]
    resource_version: str


@dataclass(slots=True)
class WatchEvent:
    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
    object: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Call:
    """One HTTP request to the API server, as built before it is sent (and resent)."""

    method: str
    path: str
    query: list[tuple[str, str]] | None = None
    data: bytes | None = None
    content_type: str = "application/json"


@dataclass(kw_only=True)
class Kube:
    """A connected API client. Build with `connect()`; close with `close()` or `async with`."""

    api: Any
    settings: ClientSettings = field(default_factory=ClientSettings)
    observer: RequestObserver | None = None
    _bucket: TokenBucket = field(init=False)
    _session: aiohttp.ClientSession = field(init=False)
    _per_request: dict[str, Any] = field(init=False)
    """The same for every request: proxy and TLS server name."""

    def __post_init__(self) -> None:
        self._bucket = TokenBucket(self.settings.qps, self.settings.burst)
        rest = self.api.rest_client
        # kubernetes-asyncio's session trusts the environment, which costs two thread hops
        # per request (~0.6 ms of CPU: a proxy look-up and a ~/.netrc read). Like client-go,
        # read the proxy settings once; the pool (TLS, limits) stays kubernetes-asyncio's.
        self._session = aiohttp.ClientSession(
            connector=rest.pool_manager.connector, connector_owner=False, read_bufsize=2**21
        )
        self._per_request = proxy_for(self.host, rest.proxy, rest.proxy_headers)
        if rest.server_hostname:
            self._per_request["server_hostname"] = rest.server_hostname

    @classmethod
    async def connect(
        cls,
        *,
        kubeconfig: str | Path | None = None,
        context: str | None = None,
        settings: ClientSettings | None = None,
        observer: RequestObserver | None = None,
    ) -> Kube:
        """Configure from `kubeconfig`, else $KUBECONFIG, else in-cluster, else ~/.kube/config."""
        # Imported here, not at the top: kubernetes-asyncio's models take ~0.3 s of CPU to
        # import, which commands that never connect (`fleet render`) should not pay.
        from kubernetes_asyncio import client as k8s_client
        from kubernetes_asyncio import config as k8s_config
        from kubernetes_asyncio.config.config_exception import ConfigException

        settings = settings or ClientSettings()
        conf = k8s_client.Configuration()
        try:
            path = str(kubeconfig) if kubeconfig else os.environ.get("KUBECONFIG")
            if not path and os.environ.get("KUBERNETES_SERVICE_HOST"):
                k8s_config.load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
            else:
                path = path or str(Path.home() / ".kube" / "config")
                first = path.split(os.pathsep)[0]
                if not os.path.isfile(first):  # noqa: ASYNC240 (a stat, once, at start-up)
                    raise errors.ConfigError(f"kubeconfig {first} does not exist")
                kubeconfig_file.load(Path(first))  # bad input in one line, not a traceback
                if context:
                    kubeconfig_file.check_context(Path(first), context)
                try:
                    await k8s_config.load_kube_config(
                        config_file=first, context=context, client_configuration=conf
                    )
                except (TypeError, AttributeError, KeyError, ValueError) as e:
                    # The loader indexes what it reads unchecked (`clusters: 7`).
                    raise errors.ConfigError(
                        f"kubeconfig {first} is malformed ({type(e).__name__}: {e})"
                    ) from e
        except ConfigException as e:
            raise errors.ConfigError(f"cannot load Kubernetes configuration: {e}") from e
        conf.connection_pool_maxsize = settings.pool_size
        api = k8s_client.ApiClient(configuration=conf)
        api.user_agent = settings.user_agent
        return cls(api=api, settings=settings, observer=observer)

    @property
    def host(self) -> str:
        return str(self.api.configuration.host)

    async def close(self) -> None:
        await self._session.close()
        await self.api.close()

    async def __aenter__(self) -> Kube:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- raw requests --------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        retry: bool = True,
        text: bool = False,
        raw: bool = False,
        attempt_timeout: float | None = None,
    ) -> Any:
        """One API call; decoded JSON back (or the body as text with `text=True`, e.g. a
        component's /metrics; as bytes with `raw=True`, e.g. a CPU profile). Retries
        429/5xx/no-answer with backoff. `attempt_timeout` replaces the settings' total timeout
        of one attempt."""
        attempt = 0
        call = _Call(method, path, query, _encode(body), content_type)
        while True:
            try:
                reply = await self._request_once(call, attempt_timeout)
            except errors.KubeError as err:
                if (
                    not retry
                    or not errors.is_retriable(err)
                    or attempt >= self.settings.max_retries
                ):
                    raise
                delay = self._backoff(attempt, err)
                attempt += 1
                log.debug("retrying %s %s in %.2fs after %s", method, path, delay, err)
                await asyncio.sleep(delay)
                continue
            if raw:
                return reply
            if text:
                return reply.decode("utf-8", "replace")
            return from_json(reply) if reply else None

    def _backoff(self, attempt: int, err: errors.KubeError) -> float:
        if isinstance(err, errors.TooManyRequests) and err.retry_after:
            return min(err.retry_after, self.settings.backoff_max)
        cap = min(self.settings.backoff_max, self.settings.backoff_base * 2**attempt)
        return random.uniform(cap / 2, cap)

    async def _open(
        self, call: _Call, client_timeout: aiohttp.ClientTimeout
    ) -> aiohttp.ClientResponse:
        """Send one request on kubernetes-asyncio's session, with its TLS and credentials.

        ApiClient.call_api would walk every body through its generic model serializer; our
        bodies are already JSON, so only its auth step (token refresh included) is reused.
        """
        query = list(call.query or [])
        headers = {
            "Accept": "application/json, */*",
            "Content-Type": call.content_type,
            "User-Agent": self.settings.user_agent,
        }
        await self.api.update_params_for_auth(headers, query, ["BearerToken"])
        url = self.host + call.path + ("?" + urlencode(query) if query else "")
        try:
            resp: aiohttp.ClientResponse = await self._session.request(
                call.method,
                url,
                data=call.data,
                headers=headers,
                timeout=client_timeout,
                **self._per_request,
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise errors.Unreachable(f"API server {self.host} unreachable: {e}") from e
        return resp

    async def _request_once(self, call: _Call, timeout_seconds: float | None = None) -> bytes:
        await self._bucket.acquire()
        start = time.perf_counter()
        status = 0
        total = self.settings.request_timeout if timeout_seconds is None else timeout_seconds
        timeout = aiohttp.ClientTimeout(total=total)
        try:
            resp = await self._open(call, timeout)
            async with resp:
                status = resp.status
                raw = await resp.read()
                if not 200 <= status < 300:
                    raise errors.from_response(status, raw, resp.headers.get("Retry-After"))
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise errors.Unreachable(f"API server {self.host} unreachable: {e}") from e
        finally:
            if self.observer:
                self.observer(
                    call.method, resource_of(call.path), status, time.perf_counter() - start
                )
        return raw

    async def fetch_component(self, url: str, *, seconds: float) -> bytes:
        """GET `url` on another component of a local cluster (kube-scheduler's /metrics or
        /debug/pprof) with this client's credentials: its client certificate, else its
        bearer token. Loopback only (`ValueError` otherwise): the component's self-signed
        serving certificate is not verified. A refusal is the KubeError of its status
        (`Forbidden` for 403), no answer within `seconds` `Unreachable`; never retried."""
        host = URL(url).host or ""
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(f"{url}: only loopback components are fetched with credentials")
        conf = self.api.configuration
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        headers: dict[str, str] = {}
        if conf.cert_file:
            context.load_cert_chain(conf.cert_file, keyfile=conf.key_file)
        else:
            await self.api.update_params_for_auth(headers, [], ["BearerToken"])
        try:
            async with self._session.get(
                url,
                headers=headers,
                ssl=context,
                timeout=aiohttp.ClientTimeout(total=seconds),
            ) as resp:
                raw = await resp.read()
                if resp.status != 200:
                    raise errors.from_response(resp.status, raw)
                return raw
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise errors.Unreachable(f"{url} unreachable: {e or type(e).__name__}") from e

    # -- typed verbs ---------------------------------------------------------------------

    async def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> ObjectList:
        """All objects, following `continue` pages; items get apiVersion and kind filled in."""
        items: list[dict[str, Any]] = []
        cont = ""
        while True:
            query = [("limit", str(page_size))]
            if label_selector:
                query.append(("labelSelector", label_selector))
            if field_selector:
                query.append(("fieldSelector", field_selector))
            if cont:
                query.append(("continue", cont))
            page = await self.request("GET", res.path(namespace), query=query)
            for item in page.get("items") or []:
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
                items.append(item)
            meta = page.get("metadata") or {}
            cont = meta.get("continue") or ""
            if not cont:
                return ObjectList(
                    items=items, resource_version=str(meta.get("resourceVersion", ""))
                )

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        obj: dict[str, Any] = await self.request("GET", res.path(namespace, name))
        return obj

    async def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        ns = namespace or body.get("metadata", {}).get("namespace")
        obj: dict[str, Any] = await self.request("POST", res.path(ns), body=body)
        return obj

    async def replace(self, res: Resource, body: dict[str, Any]) -> dict[str, Any]:
        meta = body.get("metadata", {})
        path = res.path(meta.get("namespace"), meta["name"])
        obj: dict[str, Any] = await self.request("PUT", path, body=body)
        return obj

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
        force: bool = False,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        path = res.path(namespace, name) + (f"/{subresource}" if subresource else "")
        query: list[tuple[str, str]] = []
        if field_manager:
            query.append(("fieldManager", field_manager))
        if force:
            query.append(("force", "true"))
        # The REST layer JSON-encodes apply-patch+yaml bodies itself (JSON is valid YAML), so
        # pass the object as is: a pre-encoded string would arrive as one YAML string.
        body = patch
        obj: dict[str, Any] = await self.request(
            "PATCH", path, query=query, body=body, content_type=_PATCH_CONTENT_TYPES[patch_type]
        )
        return obj

    async def apply(
        self, res: Resource, body: dict[str, Any], *, field_manager: str, force: bool = True
    ) -> dict[str, Any]:
        """Server-side apply of a whole object."""
        meta = body["metadata"]
        return await self.patch(
            res,
            meta["name"],
            body,
            namespace=meta.get("namespace"),
            patch_type="apply",
            field_manager=field_manager,
            force=force,
        )

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation: Literal["Background", "Foreground", "Orphan"] = "Background",
        grace_seconds: int | None = None,
        uid: str | None = None,
    ) -> bool:
        """Delete one object; False when it was already gone. With `uid`, only that very
        object: one recreated under the same name by someone else is left alone (Conflict)."""
        body = _delete_options(propagation, grace_seconds)
        if uid is not None:
            body["preconditions"] = {"uid": uid}
        try:
            await self.request("DELETE", res.path(namespace, name), body=body)
        except errors.NotFound:
            return False
        return True

    async def delete_collection(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str,
        propagation: Literal["Background", "Foreground", "Orphan"] = "Background",
        grace_seconds: int | None = None,
    ) -> None:
        """Delete every object of `res` matching `label_selector` (in `namespace`)."""
        query = [("labelSelector", label_selector)]
        body = _delete_options(propagation, grace_seconds)
        await self.request("DELETE", res.path(namespace), query=query, body=body)

    async def stream(
        self,
        res: Resource,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        closers: set[Callable[[], None]] | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """One watch stream from `resource_version` until the server closes it.

        Raises `errors.Gone` when the version is too old (the caller relists). While the
        stream is open, a function that closes it sits in `closers`: calling it ends the
        stream with `errors.Unreachable` (how a liveness probe cuts a watch on a hung server).
        """
        query = [
            ("watch", "1"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        await self._bucket.acquire()
        # No total timeout; an idle stream past the server's own timeout is dead.
        timeout = aiohttp.ClientTimeout(sock_connect=10, sock_read=timeout_seconds + 30)
        resp = await self._open(_Call("GET", res.path(namespace), query), timeout)
        async with resp:
            if resp.status != 200:
                raise errors.from_response(resp.status, await resp.read())
            buf = bytearray()
            cut = False

            def close() -> None:
                nonlocal cut
                cut = True
                resp.close()

            if closers is not None:
                closers.add(close)
            try:
                async for chunk in resp.content.iter_any():
                    buf += chunk
                    start = 0
                    while (nl := buf.find(b"\n", start)) >= 0:
                        line = bytes(buf[start:nl])
                        start = nl + 1
                        if line.strip():
                            yield decode_event(line, res)
                    del buf[:start]
            except (aiohttp.ClientError, TimeoutError, OSError) as e:
                raise errors.Unreachable(f"watch of {res.plural} broke: {e}") from e
            finally:
                if closers is not None:
                    closers.discard(close)
            if cut:
                raise errors.Unreachable(f"watch of {res.plural} cut: API server not answering")


def proxy_for(host: str, configured: str | None, headers: Any) -> dict[str, Any]:
    """The proxy arguments of every request to `host`: the kubeconfig's `proxy-url`, else
    HTTPS_PROXY/HTTP_PROXY unless NO_PROXY covers the host (read once, as client-go does)."""
    if configured:
        return {"proxy": configured, "proxy_headers": headers}
    try:
        proxy, auth = get_env_proxy_for_url(URL(host))
    except LookupError:
        return {}
    return {"proxy": proxy, "proxy_auth": auth}


def _delete_options(propagation: str, grace_seconds: int | None) -> dict[str, Any]:
    """A DeleteOptions body."""
    body: dict[str, Any] = {"propagationPolicy": propagation}
    if grace_seconds is not None:
        body["gracePeriodSeconds"] = grace_seconds
    return body


def _encode(body: Any) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, separators=(",", ":")).encode()


def decode_event(line: bytes, res: Resource) -> WatchEvent:
    """One line of a watch stream of `res` as a WatchEvent (an ERROR event raises the
    KubeError its Status names); public for the benches that time decoding alone."""
    raw = from_json(line)
    kind = raw.get("type")
    obj = raw.get("object") or {}
    if kind == "ERROR":
        raise errors.from_status_object(obj)
    obj.setdefault("apiVersion", res.api_version)
    obj.setdefault("kind", res.kind)
    return WatchEvent(type=kind, object=obj)
