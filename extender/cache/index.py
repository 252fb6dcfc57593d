"""The per-node topology index: devices by PCIe root and NUMA node, free or allocated.

Fed object by object (upsert/delete per kind); every change touches only the nodes it
concerns and marks their summary stale. A `Summary` is recomputed lazily, once, the next time
a handler looks at the node, so a burst of claim events costs one recompute per node, and a
prioritize call over 5,000 nodes reads small precomputed ints.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from extender import allocation, cel_functions, claims, demand, expressions, selectors, topology
from extender.cache import loan
from extender.config import Settings
from extender.expressions import Outcome as Verdict
from extender.topology import ClassSummary, DeviceKey, NodeView, Outcome, Summary
from testbed.kube import resources

log = logging.getLogger(__name__)

PlacementObserver = Callable[[Outcome, int], None]

_Apply = Callable[[dict[str, Any]], None]
_INTERN_LIMIT = 16384
_NODE_MEMO_LIMIT = 32
_DONE_PHASES = frozenset({"Succeeded", "Failed"})
MATCH = Verdict.MATCH
ERROR = Verdict.ERROR


class Index:
    def __init__(
        self, settings: Settings, *, on_placement: PlacementObserver | None = None
    ) -> None:
        self.settings = settings
        self.on_placement = on_placement
        self.release: tuple[int, int] | None = None
        """The cluster's Kubernetes (major, minor), once read: DRA's allocator differs by
        release (distinctAttribute); None: the newest's semantics."""
        self.fractional = settings.fractional_capacity is True
        """The allocator steps capacity ranges in milli-units (DRAFractionalCapacityRange):
        the setting, or read from the cluster at start when the setting leaves it open."""
        self.nodes: dict[str, NodeView] = {}
        self.evaluator = expressions.Evaluator()
        """Compiles and evaluates the CEL selectors of classes and requests (its caches)."""
        self.loan = loan.Loan()
        """Lends all of this to a thread judging a call off the event loop (`extender.judging`);
        the loop's readers and writers wait for it to come back."""
        self.classes: dict[str, selectors.DeviceClassSelector] = {}
        """DeviceClasses by name, compiled."""
        self.classes_version = object()
        """Replaced whenever a class changes (callers' parsed claims refer to classes)."""
        self.claims: dict[str, dict[str, Any]] = {}
        self.templates: dict[str, dict[str, Any]] = {}
        self._slices: dict[str, tuple[str, list[DeviceKey]]] = {}
        self._slice_counters: dict[str, list[allocation.CounterKey]] = {}
        self.counters: dict[allocation.CounterKey, dict[str, Fraction]] = {}
        """Shared counters of partitionable devices: (driver, pool, set) -> counter -> total."""
        self._device_node: dict[DeviceKey, str] = {}
        self._allocated: dict[DeviceKey, set[str]] = {}
        self._claim_devices: dict[str, tuple[DeviceKey, ...]] = {}
        self._claim_capacity: dict[str, tuple[tuple[DeviceKey, str, Fraction], ...]] = {}
        self.capacity_in_use: dict[tuple[DeviceKey, str], Fraction] = {}
        """What allocated claims consume of shared devices' capacities (consumedCapacity)."""
        self._pods: dict[str, tuple[str, str]] = {}
        self.jobs: dict[str, Counter[str]] = {}
        """job -> running pods per node (a pod being bound counts at its nominated node)."""
        self._interned: dict[tuple[object, ...], Summary] = {}
        self._node_memos: dict[str, dict[str, Any]] = {}
        self._upserts: dict[str, _Apply] = {
            "Node": self._upsert_node,
            "ResourceSlice": self._upsert_slice,
            "ResourceClaim": self._upsert_claim,
            "ResourceClaimTemplate": self._upsert_template,
            "DeviceClass": self._upsert_class,
            "Pod": self._upsert_pod,
        }
        self._deletes: dict[str, _Apply] = {
            "Node": self._delete_node,
            "ResourceSlice": self._delete_slice,
            "ResourceClaim": self._delete_claim,
            "ResourceClaimTemplate": self._delete_template,
            "DeviceClass": self._delete_class,
            "Pod": self._delete_pod,
        }

    # -- reads ---------------------------------------------------------------------------

    def summary(self, node: NodeView) -> Summary:
        s = node.summary
        if s is None:
            s = node.summary = self._summarise(node)
        return s

    def is_free(self, key: DeviceKey) -> bool:
        return key not in self._allocated

    def claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.claims.get(f"{namespace}/{name}")

    def template(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.templates.get(f"{namespace}/{name}")

    def counts(self) -> dict[str, int]:
        """Objects held per kind (for the cache gauge)."""
        return {
            "Node": sum(1 for n in self.nodes.values() if n.known),
            "ResourceSlice": len(self._slices),
            "ResourceClaim": len(self.claims),
            "ResourceClaimTemplate": len(self.templates),
            "DeviceClass": len(self.classes),
            "Pod": len(self._pods),
        }

    def judge(self, node: NodeView, pod: claims.Pod) -> allocation.Verdict:
        """Can `node`'s devices, as allocated now, satisfy the parsed claims of a pod?"""
        if self.counts_suffice(node, pod):
            return allocation.FITS
        return self.search(node, pod)

    def search(self, node: NodeView, pod: claims.Pod) -> allocation.Verdict:
        """`judge` by the allocator's search alone."""
        in_use: dict[tuple[allocation.CounterKey, str], Fraction] = {}
        allocated = self._allocated
        for key, dev in node.devices.items():
            if dev.consumes and key in allocated:
                for counter_set, counter, qty in dev.consumes:
                    ck = ((key[0], key[1], counter_set), counter)
                    try:
                        in_use[ck] = in_use.get(ck, Fraction(0)) + cel_functions.parse_quantity(qty)
                    except cel_functions.CelError:
                        continue
        return allocation.judge(
            pod,
            node.devices,
            in_use=allocated.__contains__,
            counters=self.counters,
            counters_in_use=in_use,
            classes=self.classes,
            capacity_in_use=self.capacity_in_use,
            fractional=self.fractional,
            distinct_all=self.release is None or self.release >= (1, 37),
        )

    def counts_suffice(self, node: NodeView, pod: claims.Pod) -> bool:
        """Whether `pod`'s claims fit `node` by counting alone, without the allocator's
        search: each request takes `count` devices of its class and asks nothing else (one
        alternative, no selectors of its own, no admin access, capacity or derived
        attributes, no constraints), its class errs on none of the node's devices, none of
        the devices it matches is shared or a partition, and the classes asked for match
        disjoint devices. Then any free devices of each class will do, and enough are free.
        False: the search decides (it also words why a node does not fit)."""
        if pod.unjudged is not None or pod.constraints or not pod.requests:
            return False
        wanted: dict[str, int] = {}
        for req in pod.requests:
            if len(req.alternatives) != 1:
                return False
            alt = req.alternatives[0]
            klass = self.classes.get(alt.cls)
            if (
                klass is None
                or len(alt.selectors) != len(klass.selectors)
                or alt.admin
                or alt.all_devices
                or alt.capacity
                or alt.derived
            ):
                return False
            wanted[alt.cls] = wanted.get(alt.cls, 0) + alt.count
        self.summary(node)  # its layout, with the classes that err
        layout = node.layout
        if layout is None or not node.erring.isdisjoint(wanted):
            return False
        allocated, devices = self._allocated, node.devices
        seen: set[DeviceKey] = set()  # a device two of the classes match: not counted apart
        for cls, count in wanted.items():
            free = 0
            for key, _, _ in layout.get(cls, ()):
                dev = devices[key]
                if dev.multi or dev.consumes or key in seen:
                    return False
                seen.add(key)
                if key not in allocated:
                    free += 1
            if free < count:
                return False
        return True

    def free_devices(self, node: str) -> set[DeviceKey]:
        view = self.nodes.get(node)
        return {k for k in view.devices if k not in self._allocated} if view else set()

    # -- writes --------------------------------------------------------------------------

    def upsert(self, kind: str, obj: dict[str, Any]) -> None:
        self._upserts[kind](obj)

    def delete(self, kind: str, obj: dict[str, Any]) -> None:
        self._deletes[kind](obj)

    def keys(self, kind: str) -> Iterable[str]:
        """The keys currently held for `kind` (to find what a relist no longer has)."""
        if kind == "Node":
            return [n.name for n in self.nodes.values() if n.known]
        if kind == "ResourceSlice":
            return list(self._slices)
        if kind == "ResourceClaim":
            return list(self.claims)
        if kind == "ResourceClaimTemplate":
            return list(self.templates)
        if kind == "DeviceClass":
            return list(self.classes)
        return list(self._pods)

    def _node(self, name: str) -> NodeView:
        view = self.nodes.get(name)
        if view is None:
            view = self.nodes[name] = NodeView(name=name)
        return view

    def _touch(self, name: str, *, devices: bool = False) -> None:
        """The node's allocations, labels or presence (or with `devices`, its devices)
        changed: forget what was derived from it."""
        view = self.nodes.get(name)
        if view is not None:
            view.summary = None
            if devices:
                view.layout = None
        for memo in self._node_memos.values():
            memo.pop(name, None)

    def node_memo(self, key: str) -> dict[str, Any]:
        """A per-node memo for callers' derived values (scores per pod shape), keyed by node
        name and emptied of a node whenever that node changes."""
        memo = self._node_memos.get(key)
        if memo is None:
            if len(self._node_memos) >= _NODE_MEMO_LIMIT:
                self._node_memos.clear()
            memo = self._node_memos[key] = {}
        return memo

    def _upsert_node(self, obj: dict[str, Any]) -> None:
        view = self._node(resources.name_of(obj))
        labels = resources.labels_of(obj)
        view.known = True
        view.block = labels.get(self.settings.block_label)
        view.rack = labels.get(self.settings.rack_label)
        view.host = labels.get(self.settings.host_label)
        view.labels = labels
        self._touch(view.name)

    def _delete_node(self, obj: dict[str, Any]) -> None:
        name = resources.name_of(obj)
        view = self.nodes.get(name)
        if view is None:
            return
        view.known = False
        self._touch(name)
        if not view.devices:
            del self.nodes[name]

    def _upsert_slice(self, obj: dict[str, Any]) -> None:
        name = resources.name_of(obj)
        self._delete_slice(obj)
        spec = obj.get("spec") or {}
        node = spec.get("nodeName")
        driver = spec.get("driver")
        pool = (spec.get("pool") or {}).get("name")
        if isinstance(driver, str) and pool and spec.get("sharedCounters"):
            self._add_counters(name, driver, str(pool), spec["sharedCounters"])
        if not (isinstance(node, str) and node and isinstance(driver, str) and pool):
            return  # network-attached or malformed slices have no node to score
        view = self._node(node)
        keys: list[DeviceKey] = []
        for dev in spec.get("devices") or []:
            if not isinstance(dev, dict) or not dev.get("name"):
                continue
            key: DeviceKey = (driver, str(pool), str(dev["name"]))
            view.devices[key] = topology.device_of(driver, dev)
            self._device_node[key] = node
            keys.append(key)
        self._slices[name] = (node, keys)
        self._touch(node, devices=True)

    def _add_counters(self, slice_name: str, driver: str, pool: str, sets: Any) -> None:
        keys: list[allocation.CounterKey] = []
        for counter_set in sets if isinstance(sets, list) else []:
            if not isinstance(counter_set, dict):
                continue
            key = (driver, pool, str(counter_set.get("name")))
            totals: dict[str, Fraction] = {}
            for counter, amount in (counter_set.get("counters") or {}).items():
                try:
                    totals[str(counter)] = cel_functions.parse_quantity(str(amount.get("value")))
                except (cel_functions.CelError, AttributeError):
                    continue
            self.counters[key] = totals
            keys.append(key)
        self._slice_counters[slice_name] = keys

    def _delete_slice(self, obj: dict[str, Any]) -> None:
        for key in self._slice_counters.pop(resources.name_of(obj), ()):
            self.counters.pop(key, None)
        old = self._slices.pop(resources.name_of(obj), None)
        if old is None:
            return
        node, keys = old
        view = self.nodes.get(node)
        for key in keys:
            self._device_node.pop(key, None)
            if view is not None:
                view.devices.pop(key, None)
        self._touch(node, devices=True)
        if view is not None and not view.known and not view.devices:
            del self.nodes[node]

    def _upsert_claim(self, obj: dict[str, Any]) -> None:
        key = resources.key_of(obj)
        allocation = (obj.get("status") or {}).get("allocation")
        # Keep what demand reads (spec, whether allocated), not managedFields and the rest:
        # tens of thousands of claims are held.
        self.claims[key] = {"spec": obj.get("spec"), "status": {"allocation": allocation}}
        results = (allocation or {}).get("devices") or {}
        # Admin access uses a device without consuming it (DRA does not count it in use).
        new = tuple(
            (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
            for r in results.get("results") or []
            if isinstance(r, dict) and r.get("adminAccess") is not True
        )
        self._set_capacity(key, _consumed_capacity(results.get("results")))
        old = self._claim_devices.get(key, ())
        if new == old:
            return
        self._release(key, old)
        if new:
            self._claim_devices[key] = new
            for dk in new:
                self._allocated.setdefault(dk, set()).add(key)
                self._touch(self._device_node.get(dk, ""))
            if not old:
                self._observe_placement(new)
        else:
            self._claim_devices.pop(key, None)

    def _set_capacity(self, claim: str, new: tuple[tuple[DeviceKey, str, Fraction], ...]) -> None:
        """Replace what `claim` consumes of shared devices' capacities."""
        old = self._claim_capacity.get(claim, ())
        if new == old:
            return
        use = self.capacity_in_use
        for dk, name, amount in old:
            left = use.get((dk, name), Fraction(0)) - amount
            if left > 0:
                use[(dk, name)] = left
            else:
                use.pop((dk, name), None)
            self._touch(self._device_node.get(dk, ""))
        for dk, name, amount in new:
            use[(dk, name)] = use.get((dk, name), Fraction(0)) + amount
            self._touch(self._device_node.get(dk, ""))
        if new:
            self._claim_capacity[claim] = new
        else:
            self._claim_capacity.pop(claim, None)

    def _delete_claim(self, obj: dict[str, Any]) -> None:
        key = resources.key_of(obj)
        self.claims.pop(key, None)
        self._set_capacity(key, ())
        self._release(key, self._claim_devices.pop(key, ()))

    def _release(self, claim: str, keys: tuple[DeviceKey, ...]) -> None:
        for dk in keys:
            holders = self._allocated.get(dk)
            if holders is not None:
                holders.discard(claim)
                if not holders:
                    del self._allocated[dk]
            self._touch(self._device_node.get(dk, ""))

    def _upsert_template(self, obj: dict[str, Any]) -> None:
        self.templates[resources.key_of(obj)] = obj

    def _delete_template(self, obj: dict[str, Any]) -> None:
        self.templates.pop(resources.key_of(obj), None)

    def _upsert_class(self, obj: dict[str, Any]) -> None:
        name = resources.name_of(obj)
        parsed = selectors.parse_device_class(obj, self.evaluator)
        old = self.classes.get(name)
        if old is not None and old.expressions == parsed.expressions:
            return
        if parsed.not_judged is not None:
            log.info("DeviceClass %s not judged: %s", name, parsed.not_judged)
        self.classes[name] = parsed
        self.classes_version = object()
        self._touch_all()

    def _delete_class(self, obj: dict[str, Any]) -> None:
        if self.classes.pop(resources.name_of(obj), None) is not None:
            self.classes_version = object()
            self._touch_all()

    def _touch_all(self) -> None:
        self._interned.clear()
        self._node_memos.clear()
        for view in self.nodes.values():
            view.summary = None
            view.layout = None

    def _upsert_pod(self, obj: dict[str, Any]) -> None:
        key = resources.key_of(obj)
        # Bound, or chosen and being bound (see cache.store.NOMINATED_FIELD_SELECTOR).
        node = (obj.get("spec") or {}).get("nodeName") or (obj.get("status") or {}).get(
            "nominatedNodeName"
        )
        job = demand.job_of(obj, self.settings)
        running = (
            job is not None
            and isinstance(node, str)
            and node
            and (obj.get("status") or {}).get("phase") not in _DONE_PHASES
            and not (obj.get("metadata") or {}).get("deletionTimestamp")
        )
        place = (str(job), str(node)) if running else None
        old = self._pods.get(key)
        if old == place:
            return
        if old is not None:
            self._forget_pod(key, old)
        if place is not None:
            self._pods[key] = place
            self.jobs.setdefault(place[0], Counter())[place[1]] += 1

    def _delete_pod(self, obj: dict[str, Any]) -> None:
        key = resources.key_of(obj)
        old = self._pods.get(key)
        if old is not None:
            self._forget_pod(key, old)

    def _forget_pod(self, key: str, place: tuple[str, str]) -> None:
        del self._pods[key]
        job, node = place
        nodes = self.jobs.get(job)
        if nodes is None:
            return
        nodes[node] -= 1
        if nodes[node] <= 0:
            del nodes[node]
        if not nodes:
            del self.jobs[job]

    # -- derived -------------------------------------------------------------------------

    def _layout(self, node: NodeView) -> dict[str, tuple[topology.Member, ...]]:
        """Which of the node's devices each judged class matches (CEL runs here, cached per
        device), with their PCIe root and NUMA node; the classes that err on one of them go
        to `node.erring`."""
        numa = topology.resolved_numa(node.devices)
        out: dict[str, tuple[topology.Member, ...]] = {}
        erring = []
        for cls, sel in self.classes.items():
            if sel.not_judged is not None:
                continue
            outcomes = [(key, dev, sel.matches(dev)) for key, dev in node.devices.items()]
            members = tuple(
                (key, dev.root, numa.get(key)) for key, dev, o in outcomes if o is MATCH
            )
            if any(o is ERROR for _, _, o in outcomes):
                erring.append(cls)
            if members:
                out[cls] = members
        node.erring = frozenset(erring)
        return out

    def _summarise(self, node: NodeView) -> Summary:
        layout = node.layout
        if layout is None:
            layout = node.layout = self._layout(node)
        allocated = self._allocated
        out: dict[str, ClassSummary] = {}
        for cls, members in layout.items():
            free = 0
            root_free: dict[str, int] = {}
            numa_free: dict[int, int] = {}
            for key, root, n in members:
                if key in allocated:
                    continue
                free += 1
                if root is not None:
                    root_free[root] = root_free.get(root, 0) + 1
                if n is not None:
                    numa_free[n] = numa_free.get(n, 0) + 1
            out[cls] = ClassSummary(len(members), free, root_free, numa_free)
        # Nodes in the same state share one Summary, so scoring work is per distinct state
        # (at 5,000 identical nodes, one computation per call instead of 5,000).
        state = tuple(
            (
                cls,
                c.total,
                c.free,
                tuple(sorted(c.root_free.items())),
                tuple(sorted(c.numa_free.items())),
            )
            for cls, c in sorted(out.items())
        )
        shared = self._interned.get(state)
        if shared is None:
            if len(self._interned) >= _INTERN_LIMIT:
                self._interned.clear()
            shared = self._interned[state] = Summary(classes=out)
        return shared

    def _observe_placement(self, keys: tuple[DeviceKey, ...]) -> None:
        """Classify a fresh allocation: each GPU paired with a NIC of the same claim on the
        same PCIe root, else on the same NUMA node, else unaligned."""
        if self.on_placement is None:
            return
        node = self.nodes.get(self._device_node.get(keys[0], ""))
        if node is None:
            return
        gpus = [k for k in keys if k[0] in self.settings.gpu_drivers and k in node.devices]
        nics = [k for k in keys if k[0] in self.settings.nic_drivers and k in node.devices]
        if not gpus or not nics:
            return  # before resolving the node's NUMA: most claims have no pair
        numa = topology.resolved_numa(node.devices)
        tally: Counter[Outcome] = Counter()

        def same_root(g: DeviceKey, n: DeviceKey) -> bool:
            root = node.devices[g].root
            return root is not None and root == node.devices[n].root

        def same_numa(g: DeviceKey, n: DeviceKey) -> bool:
            return numa.get(g) is not None and numa.get(g) == numa.get(n)

        levels: tuple[tuple[Outcome, Callable[[DeviceKey, DeviceKey], bool]], ...] = (
            ("aligned", same_root),
            ("numa", same_numa),
        )
        for outcome, same in levels:
            for g in list(gpus):
                partner = next((n for n in nics if same(g, n)), None)
                if partner is not None:
                    tally[outcome] += 1
                    gpus.remove(g)
                    nics.remove(partner)
        tally["unaligned"] += min(len(gpus), len(nics))
        for outcome, count in tally.items():
            if count:
                self.on_placement(outcome, count)


def _consumed_capacity(results: Any) -> tuple[tuple[DeviceKey, str, Fraction], ...]:
    """(device, qualified capacity name, amount) of each allocation result's consumedCapacity
    (set on shared devices; admin access consumes nothing)."""
    out: list[tuple[DeviceKey, str, Fraction]] = []
    for r in results if isinstance(results, list) else ():
        if not isinstance(r, dict) or r.get("adminAccess") is True:
            continue
        consumed = r.get("consumedCapacity")
        if not isinstance(consumed, dict):
            continue
        driver = str(r.get("driver"))
        dk = (driver, str(r.get("pool")), str(r.get("device")))
        for name, qty in consumed.items():
            try:
                amount = cel_functions.parse_quantity(str(qty))
            except cel_functions.CelError:
                continue
            out.append((dk, name if "/" in name else f"{driver}/{name}", amount))
    return tuple(out)
