"""The mixed fleet an experiment file names with `fleet.profile: PROFILE` (pure): five of the
fleet's hardware profiles in blocks and racks, GPUs also as extended resources. The built-in
comparisons run on it; any file may."""

from __future__ import annotations

from typing import Any

PROFILE = "demo"
"""The `fleet.profile` that names this mix rather than a single hardware profile: a name in
the experiment files' format (data), kept as files already spell it."""

# Share of the fleet per hardware profile (names of the fleet's built-in profiles).
POOLS: tuple[tuple[str, str, float], ...] = (
    ("h100", "dgx-h100", 0.5),
    ("h100-4nic", "h100-4nic", 0.2),
    ("b200", "a4-highgpu-8g", 0.1),
    ("l4", "l4-4gpu", 0.1),
    ("cpu", "cpu-only", 0.1),
)


def spec(nodes: int, seed: int = 0) -> dict[str, Any]:
    """A fleet spec of `nodes` nodes in the POOLS' shares, named PROFILE."""
    counts = [int(nodes * share) for _, _, share in POOLS]
    counts[0] += nodes - sum(counts)  # rounding goes to the biggest pool
    return {
        "name": PROFILE,
        "seed": seed,
        "extendedResources": True,
        "topology": {"hostsPerRack": 8, "racksPerBlock": 4},
        "pools": [
            {"name": name, "profile": profile, "count": count}
            for (name, profile, _), count in zip(POOLS, counts, strict=True)
            if count > 0
        ],
    }
