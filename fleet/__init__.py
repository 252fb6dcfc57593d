"""fleet: a GPU cluster made of kwok fake nodes, published the way real DRA drivers would.

A fleet spec (`spec.py`: pools of hardware profiles, topology, labels, taints) plus hardware
profiles as data (`profiles.py`, `profiles/*.yaml`) are validated once against every API
limit (`limits.py`) and rendered, purely, into Nodes, ResourceSlices (shaped like the NVIDIA GPU DRA
driver's and DRANet's) and DeviceClasses (`render.py`). `reconcile.py` makes the cluster hold
exactly those objects, writing only what `diff.py` finds different; `audit.py` checks the
result. Two front ends sit on top: the `fleet` CLI (`cli.py`: render, apply, status, delete)
and `fleet serve` (`service.py`), which reconciles `Fleet` custom resources (`crd.py`).

Layers (import-linter checks them): cli, service > reconcile, crd > audit, diff, metrics,
yamlout > render > spec > profiles > limits.
"""
