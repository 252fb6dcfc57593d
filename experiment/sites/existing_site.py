"""A cluster the user already has, reached by kubeconfig and context, as an experiment's site.

`opened()` checks first and changes nothing until the checks pass: the kubeconfig and context
exist (else `SiteUsageError`, exit 2), the API server answers and serves DRA
(resource.k8s.io/v1) (else `SiteError`, exit 1). Then it creates, by server-side apply under
one field manager, only what is missing of what the experiment needs (the namespace, the
DeviceClasses, RBAC, and kwok's controller and Stages where kwok does not run), and on leaving
deletes exactly what it created, leaving what was there before.

Each variant's scheduler is a second kube-scheduler of its own in the cluster
(manifests/second-scheduler: a Deployment with the extender as a native sidecar, fed a
per-variant ConfigMap; `experiment.sites.cluster_objects` renders them), made when a variant first
asks for it and deleted when its block ends. loadgen scrapes it through the API server's pod
proxy. A `PodStandIn` can run a scheduler pod's containers as local processes from the very
objects applied: how the tests use a kwok cluster, whose pods are faked (Running, doing
nothing), as an existing cluster.

Children get `kubeconfig`: the chosen context alone, flattened, in a private directory under
the testbed's state home, removed on leaving, or by the next run if this one is killed (it
carries credentials, so it is kept out of the results and out of /tmp).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import shutil
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from experiment.sites import cluster_objects as co
from experiment.sites.site import Scheduler, SchedulerSetup, Site
from testbed import cliconv, vocab
from testbed.cluster import paths, scratch
from testbed.kube import crds, errors, kubeconfig, resources
from testbed.kube.client import ClientSettings, Kube
from testbed.kube.resources import Resource

log = logging.getLogger(__name__)

Obj = dict[str, Any]
T = TypeVar("T")

DEFAULT_IMAGE = "dra-testbed:dev"
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", namespaced=True)
_STAGE_CRD = "stages.kwok.x-k8s.io"


class SiteUsageError(ValueError):
    """The kubeconfig or context given cannot be used: exit 2, nothing changed."""


class SiteError(RuntimeError):
    """The cluster cannot be used or an object did not come up: exit 1."""


class PodStandIn(Protocol):
    """Runs what a scheduler pod would run, from the objects as applied to the cluster."""

    def scheduler(
        self, config_map: Obj, deployment: Obj, kubeconfig: Path, workdir: Path
    ) -> contextlib.AbstractContextManager[Scheduler]: ...


@dataclass(frozen=True)
class Created:
    """One object this site created (and so deletes: that very object, by its uid)."""

    res: Resource
    name: str
    namespace: str | None
    uid: str | None = None


def _describe(obj: Obj) -> str:
    meta = obj["metadata"]
    ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj['kind']} {ns}{meta['name']}"


class SiteApi:
    """The site's API calls, on a client opened per call of `run` (the runner is synchronous,
    so each step is one short event loop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._kinds: dict[tuple[str, str], Resource] = {}

    def run(self, step: Callable[[Kube], Awaitable[T]]) -> T:
        """`step` on a fresh client; an API failure it lets through becomes a SiteError (a
        kubeconfig that cannot be loaded stays a ConfigError: usage, not runtime)."""

        async def go() -> T:
            settings = ClientSettings(max_retries=2, request_timeout=20.0)
            async with await Kube.connect(kubeconfig=self.path, settings=settings) as kube:
                return await step(kube)

        try:
            return asyncio.run(go())
        except errors.ConfigError:
            raise
        except errors.KubeError as e:
            raise SiteError(f"the cluster's API: {e}") from e

    async def resource(self, kube: Kube, obj: Obj) -> Resource:
        """The REST resource of `obj`'s kind, from discovery (any kind the server serves)."""
        api_version, kind = obj["apiVersion"], obj["kind"]
        if (api_version, kind) not in self._kinds:
            path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
            try:
                found = await kube.request("GET", path)
            except errors.NotFound:
                found = {}
            group, _, version = api_version.rpartition("/")
            for r in found.get("resources") or ():
                if "/" not in r["name"]:
                    self._kinds[(api_version, r["kind"])] = Resource(
                        group, version, r["name"], r["kind"], bool(r["namespaced"])
                    )
        if (api_version, kind) not in self._kinds:
            raise SiteError(f"the cluster serves no {kind} in {api_version}")
        return self._kinds[(api_version, kind)]


@dataclass
class ExistingSite:
    """An opened existing cluster (see the module doc); build with `opened()`."""

    api: SiteApi
    """The site's API calls (discovery of any kind the cluster serves)."""
    _manifests: co.Manifests
    _image: str
    _scheduler_image: str
    _feature_gates: dict[str, bool]
    _description: str
    _timeout: float
    _stand_in: PodStandIn | None
    created: list[Created] = field(default_factory=list)
    """What this site created and deletes on leaving, in creation order."""
    run: str = field(default_factory=lambda: secrets.token_hex(3))
    """This run's suffix on its per-variant objects: concurrent runs never share them."""
    _active: dict[str, Scheduler] = field(default_factory=dict)

    @property
    def kubeconfig(self) -> Path:
        return self.api.path

    @property
    def fleet_flags(self) -> tuple[str, ...]:
        return ()  # `fleet apply` itself: a fleet service there is the cluster owner's

    @property
    def description(self) -> str:
        return self._description

    @property
    def schedulers_per_arm(self) -> bool:
        return False  # each second scheduler is a Deployment there, made once per stage

    def processes_cpu(self) -> dict[str, float]:
        return {}  # the cluster's processes are not this machine's

    def kill(self, component: str) -> float | None:
        raise SiteError(f"{component}: faults run on a local cluster the testbed brought up")

    def repair(self, component: str) -> None:
        raise SiteError(f"{component}: faults run on a local cluster the testbed brought up")

    @contextlib.contextmanager
    def scheduler(self, setup: SchedulerSetup, workdir: Path) -> Iterator[Scheduler]:
        """The variant's own second scheduler, until the block ends (a setup asked for again
        inside that block is shared, not made twice)."""
        name = co.variant_name(setup, self._feature_gates, self.run)
        if name in self._active:
            # Blocks nest (the runner holds a stage's schedulers in one ExitStack), so the
            # first block, which made it, is the last to end.
            yield self._active[name]
            return
        config_map, deployment = co.variant(
            self._manifests,
            setup,
            image=self._image,
            scheduler_image=self._scheduler_image,
            feature_gates=self._feature_gates,
            run=self.run,
        )
        made: list[Created] = []
        try:
            objs = [config_map, deployment]
            applied = self.api.run(lambda k: self._apply_variant(k, objs, made))
            pod = self.api.run(lambda k: _wait_deployment(k, co.NAMESPACE, name, self._timeout))
            with contextlib.ExitStack() as stack:
                if self._stand_in is not None:
                    cm, dep = applied
                    running = stack.enter_context(
                        self._stand_in.scheduler(cm, dep, self.kubeconfig, workdir)
                    )
                else:
                    running = _in_cluster(
                        name,
                        pod,
                        extender=setup.extender,
                        read_log=functools.partial(self._scheduler_log, pod),
                    )
                    stack.callback(self._save_logs, pod, workdir)
                self._active[name] = running
                try:
                    yield running
                finally:
                    self._active.pop(name, None)
        finally:
            self.api.run(lambda k: _delete(k, made))

    def _logs(self, pod: str, containers: tuple[str, ...]) -> dict[str, str]:
        """The containers' logs the cluster serves (a cluster may serve none: a failure is
        logged and that container left out)."""

        async def fetch(kube: Kube) -> dict[str, str]:
            path = resources.PODS.path(co.NAMESPACE, pod) + "/log"
            logs = {}
            for container in containers:
                try:
                    logs[container] = await kube.request(
                        "GET", path, query=[("container", container)], text=True, retry=False
                    )
                except errors.KubeError as e:
                    log.debug("no %s log of pod %s: %s", container, pod, e)
            return logs

        try:
            return self.api.run(fetch)
        except SiteError as e:
            log.debug("no logs of pod %s: %s", pod, e)
            return {}

    def _scheduler_log(self, pod: str) -> str | None:
        """kube-scheduler's log in the variant's pod, for the validity check (None: not served)."""
        return self._logs(pod, ("kube-scheduler",)).get("kube-scheduler")

    def _save_logs(self, pod: str, workdir: Path) -> None:
        """Keep the pod's container logs beside the run (best effort: the run's figures never
        depend on them)."""
        for container, text in self._logs(pod, ("kube-scheduler", "extender")).items():
            workdir.mkdir(parents=True, exist_ok=True)
            (workdir / f"{container}.log").write_text(text)

    async def _apply_variant(self, kube: Kube, objs: list[Obj], made: list[Created]) -> list[Obj]:
        out = []
        for obj in objs:
            res = await self.api.resource(kube, obj)
            try:
                # Created, never applied over: the name is this run's, so one that exists
                # is someone else's and is not taken over.
                made_now = await kube.create(res, obj)
            except errors.KubeError as e:
                raise SiteError(f"cannot create {_describe(obj)}: {e}") from e
            made.append(_created(res, made_now))
            out.append(made_now)
        return out


def _in_cluster(
    name: str, pod: str, *, extender: bool, read_log: Callable[[], str | None]
) -> Scheduler:
    metrics = co.pod_proxy(co.NAMESPACE, pod, co.SCHEDULER_METRICS_PORT, "/metrics", https=True)
    ext = co.pod_proxy(co.NAMESPACE, pod, co.EXTENDER_ADMIN_PORT, "/metrics", https=False)
    return Scheduler(
        name=name,
        metrics_url=metrics,
        extender_metrics_url=ext if extender else None,
        read_log=read_log,
    )


def _pod_state(pod: Obj) -> str:
    """Why a pod is not ready, in a few words."""
    status = pod.get("status") or {}
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") != "True":
            return f"not scheduled: {cond.get('message') or cond.get('reason')}"
    for c in [
        *(status.get("initContainerStatuses") or ()),
        *(status.get("containerStatuses") or ()),
    ]:
        waiting = (c.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            return f"container {c.get('name')}: {waiting['reason']}"
    return f"phase {status.get('phase', 'unknown')}"


def _ready(pod: Obj) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conds = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


async def _wait_deployment(kube: Kube, namespace: str, name: str, seconds: float) -> str:
    """The name of the Deployment's ready pod, once it has one; SiteError after `timeout`,
    naming what the pod waits for (unschedulable, an image pull, ...)."""
    deadline = time.monotonic() + seconds
    pods: list[Obj] = []
    while True:
        dep = await kube.get(DEPLOYMENTS, name, namespace)
        selector = resources.label_selector(dep["spec"]["selector"].get("matchLabels") or {})
        status = dep.get("status") or {}
        current = status.get("observedGeneration", 0) >= dep["metadata"].get("generation", 1)
        pods = (await kube.list(resources.PODS, namespace=namespace, label_selector=selector)).items
        ready = [p for p in pods if _ready(p)]
        if current and status.get("availableReplicas", 0) >= 1 and ready:
            return resources.name_of(ready[0])
        if time.monotonic() > deadline:
            why = _pod_state(pods[0]) if pods else "no pod created"
            raise SiteError(
                f"Deployment {namespace}/{name} not available after {seconds:.0f}s ({why})"
            )
        await asyncio.sleep(2)


async def exists(kube: Kube, res: Resource, obj: Obj) -> bool:
    """Whether the object `obj` names (kind `res`) exists on the cluster."""
    meta = obj["metadata"]
    try:
        await kube.get(res, meta["name"], meta.get("namespace") if res.namespaced else None)
    except errors.NotFound:
        return False
    return True


def _created(res: Resource, obj: Obj) -> Created:
    meta = obj["metadata"]
    return Created(res, meta["name"], meta.get("namespace"), meta.get("uid"))


async def _delete(kube: Kube, made: list[Created]) -> list[Created]:
    """Delete in reverse creation order, each the very object made (its uid: one recreated
    by someone else under the name is left alone); an object already gone is fine, any other
    failure is logged (the rest are still deleted). Returns those it deleted."""
    deleted = []
    for c in reversed(made):
        try:
            await kube.delete(c.res, c.name, c.namespace if c.res.namespaced else None, uid=c.uid)
            deleted.append(c)
        except errors.Conflict:
            log.warning("%s %s was replaced by someone else: left alone", c.res.kind, c.name)
        except errors.KubeError as e:
            log.warning("could not delete %s %s: %s", c.res.kind, c.name, e)
    return deleted


async def _check(kube: Kube, answer_within: float = cliconv.DEFAULT_REQUEST_TIMEOUT) -> str:
    """The cluster's gitVersion, once it answers and serves DRA."""
    timeout = answer_within
    try:  # once, not retried: a silent server is one line within it (--request-timeout)
        version = await kube.request("GET", "/version", attempt_timeout=timeout, retry=False)
    except errors.KubeError as e:
        silent = isinstance(e.__cause__, TimeoutError)
        why = f"it did not answer within {timeout:g}s (--request-timeout)" if silent else e
        raise SiteError(f"cannot reach the cluster at {kube.host}: {why}") from e
    try:
        await kube.request("GET", "/apis/resource.k8s.io/v1", attempt_timeout=timeout)
    except errors.NotFound as e:
        raise SiteError(
            f"the cluster at {kube.host} ({version.get('gitVersion')}) serves no "
            "resource.k8s.io/v1 (DRA); Kubernetes 1.34 or later is needed"
        ) from e
    except errors.KubeError as e:
        raise SiteError(f"cannot reach the cluster at {kube.host}: {e}") from e
    return str(version.get("gitVersion", "unknown"))


async def _kwok_runs(kube: Kube) -> bool:
    """kwok is installed (its Stage CRD, or its controller's Deployment, exists)."""
    try:
        await kube.get(resources.CRDS, _STAGE_CRD)
        return True
    except errors.NotFound:
        pass
    namespace, name = co.KWOK_CONTROLLER
    try:
        await kube.get(DEPLOYMENTS, name, namespace)
        return True
    except errors.NotFound:
        return False


async def _ensure(api: SiteApi, kube: Kube, objs: list[Obj], made: list[Created], run: str) -> None:
    """Create by server-side apply each object that is missing, marked as `run`'s (a record
    on the cluster of what an experiment made, even if it is killed); leave the others
    alone."""
    for obj in objs:
        res = await api.resource(kube, obj)
        meta = obj["metadata"]
        meta["annotations"] = {**(meta.get("annotations") or {}), co.ANNOTATION_RUN: run}
        try:
            if await exists(kube, res, obj):
                continue
            if not res.namespaced:
                meta.pop("namespace", None)  # kwok's release names one on cluster-scoped kinds
            applied = await kube.apply(res, obj, field_manager=co.FIELD_MANAGER, force=False)
        except errors.KubeError as e:
            raise SiteError(f"cannot create {_describe(obj)}: {e}") from e
        made.append(_created(res, applied))
        log.info("created %s", _describe(obj))
        if res == resources.CRDS and not await crds.wait_established(kube, meta["name"]):
            raise SiteError(f"CustomResourceDefinition {meta['name']} not established after 60s")


@contextlib.contextmanager
def _checked(
    kubeconfig_path: str | Path | None,
    context: str | None,
    timeout: float = cliconv.DEFAULT_REQUEST_TIMEOUT,
) -> Iterator[tuple[SiteApi, str]]:
    """The context's own kubeconfig (in a private directory, removed afterwards) and the
    cluster's gitVersion, once the kubeconfig, the context and the cluster pass the checks."""
    private = scratch.private_dir("site-kubeconfigs")
    try:
        try:
            path = kubeconfig.write_minified(kubeconfig_path, context, private / "kubeconfig")
            api = SiteApi(path)
            version = api.run(lambda kube: _check(kube, timeout))
        except errors.ConfigError as e:
            raise SiteUsageError(str(e)) from e
        yield api, version
    finally:
        shutil.rmtree(private, ignore_errors=True)


def preflight(
    kubeconfig_path: str | Path | None = None,
    context: str | None = None,
    request_timeout: float = cliconv.DEFAULT_REQUEST_TIMEOUT,
) -> str:
    """Check the kubeconfig, the context and the cluster, creating nothing (a run calls it
    before it makes its output directory; the cluster must answer within `request_timeout`);
    the cluster's gitVersion."""
    with _checked(kubeconfig_path, context, request_timeout) as (_, version):
        return version


def minor_release(version: str) -> str:
    """v1.36.3 -> 1.36."""
    return ".".join(version.lstrip("v").split(".")[:2])


@contextlib.contextmanager
def opened(
    *,
    kubeconfig_path: str | Path | None = None,
    context: str | None = None,
    image: str = DEFAULT_IMAGE,
    scheduler_image: str | None = None,
    release: str | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    ready_timeout: float = 300.0,
    stand_in: PodStandIn | None = None,
    manifests: Path | None = None,
    kwok_flow_control: bool = False,
    request_timeout: float = cliconv.DEFAULT_REQUEST_TIMEOUT,
) -> Iterator[ExistingSite]:
    """The cluster of `context` in the kubeconfig (default: $KUBECONFIG, ~/.kube/config; its
    current context), ready for variants until the block ends. `image` runs the extender;
    `scheduler_image` defaults to kube-scheduler of the cluster's own release. `release`
    (e.g. "1.36"), if given, must be the cluster's; `feature_gates` go to every variant's
    kube-scheduler (the API server's gates are the cluster's own). `kwok_flow_control`
    installs, with a kwok that is missing, kwok's FlowSchema (it exempts kwok's controller from
    API Priority and Fairness on the whole cluster: asked for, never by default)."""
    m = co.Manifests.load(manifests or paths.manifests_dir())
    with _checked(kubeconfig_path, context, request_timeout) as (api, version):
        if release and minor_release(release) != minor_release(version):
            raise SiteError(
                f"the experiment asks for Kubernetes {release}; the cluster runs {version}"
            )
        made: list[Created] = []
        run = secrets.token_hex(3)
        kwok_objs = co.kwok(m, flow_control=kwok_flow_control)
        try:

            async def prepare(kube: Kube) -> str:
                await _ensure(api, kube, co.shared(m), made, run)
                if not await _kwok_runs(kube):
                    await _ensure(api, kube, kwok_objs, made, run)
                    namespace, name = co.KWOK_CONTROLLER
                    await _wait_deployment(kube, namespace, name, ready_timeout)
                elif await exists(kube, resources.CRDS, {"metadata": {"name": _STAGE_CRD}}):
                    # A kwok of the user's: add the testbed's Stages it lacks (a Job's pod
                    # completing after its delay), keep the ones it has.
                    stages = [o for o in kwok_objs if o["kind"] == "Stage"]
                    await _ensure(api, kube, stages, made, run)
                await kube.create(resources.CONFIG_MAPS, co.run_record(run, made_names(made)))
                return kube.host

            host = api.run(prepare)
            yield ExistingSite(
                api=api,
                _manifests=m,
                _image=image,
                _scheduler_image=scheduler_image or co.scheduler_image(version),
                _feature_gates=dict(feature_gates or {}),
                _description=f"existing cluster {host} "
                f"(context {kubeconfig.current_context(api.path)}), Kubernetes {version}",
                _timeout=ready_timeout,
                _stand_in=stand_in,
                created=made,
                run=run,
            )
        finally:
            api.run(lambda k: _delete_and_wait(k, made, run))


ClusterKey = tuple[str, tuple[tuple[str, bool], ...]]
"""(release, feature gates) a stage of an experiment runs on (experiment.plan.matrix)."""


def opener(
    keys: list[ClusterKey],
    *,
    kubeconfig_path: str | Path | None,
    context: str | None,
    image: str = DEFAULT_IMAGE,
    explicit_release: bool = False,
    request_timeout: float = cliconv.DEFAULT_REQUEST_TIMEOUT,
) -> Callable[[ClusterKey, Path], contextlib.AbstractContextManager[ExistingSite]]:
    """The runner's site opener on one existing cluster. It runs one release, so an
    experiment whose variants need several clusters is refused here (`SiteUsageError`)."""
    if len(keys) > 1:
        asked = ", ".join(f"{r} {dict(g) or ''}".strip() for r, g in keys)
        raise SiteUsageError(
            "an existing cluster runs one Kubernetes release and one set of API server "
            f"feature gates; the variants ask for several ({asked}): run them on the local "
            "cluster, or one cluster at a time"
        )

    def open_site(
        key: ClusterKey, workdir: Path
    ) -> contextlib.AbstractContextManager[ExistingSite]:
        release, gates = key
        return opened(
            kubeconfig_path=kubeconfig_path,
            context=context,
            image=image,
            release=release if explicit_release else None,
            feature_gates=dict(gates),
            request_timeout=request_timeout,
        )

    return open_site


def made_names(made: list[Created]) -> list[str]:
    return [f"{c.res.kind} {c.namespace + '/' if c.namespace else ''}{c.name}" for c in made]


async def _delete_and_wait(
    kube: Kube, made: list[Created], run: str, seconds: float = 120.0
) -> None:
    """Delete this run's record and what it created of the shared objects, unless others
    still use them: another run (its record), its variant schedulers, or a fleet (its record
    lives in the namespace). Then they stay, marked as this run's: the record of a run
    killed on the way names what it made, for a cleanup by hand. Waits for what it deleted
    to be gone (a namespace or a CRD lingers while its contents go), so the next run finds
    it missing and creates it again rather than taking a terminating one for present."""
    await kube.delete(resources.CONFIG_MAPS, co.run_record_name(run), co.NAMESPACE)
    listed = await asyncio.gather(
        kube.list(resources.CONFIG_MAPS, namespace=co.NAMESPACE, label_selector=co.LABEL_RUN),
        kube.list(DEPLOYMENTS, namespace=co.NAMESPACE, label_selector=co.LABEL_VARIANT),
        kube.list(
            resources.CONFIG_MAPS,
            namespace=co.NAMESPACE,
            label_selector=f"{vocab.LABEL_MANAGED_BY}={vocab.FLEET_MANAGER}",
        ),
    )
    users = [o for found in listed for o in found.items]
    if users and made:
        names = ", ".join(sorted(resources.name_of(o) for o in users))
        log.warning("others (%s) still use the shared objects: left them", names)
        return
    deadline = time.monotonic() + seconds
    for c in await _delete(kube, made):
        namespace = c.namespace if c.res.namespaced else None
        while time.monotonic() < deadline:
            try:
                obj = await kube.get(c.res, c.name, namespace)
            except errors.NotFound:
                break
            if obj["metadata"].get("uid") != c.uid:
                break  # made again under the name since: not ours to wait for
            await asyncio.sleep(0.5)


def as_site(site: ExistingSite) -> Site:
    """The site as the runner sees it (and mypy checks that it keeps the protocol)."""
    return site
