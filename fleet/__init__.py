"""fleet: a GPU cluster made of kwok fake nodes, published the way real DRA drivers would.

A fleet spec (`spec.py`: pools of hardware profiles, topology, labels, taints) plus hardware
profiles as data (`profiles.py`, `profiles/*.yaml`) are laid out into nodes (`layout.py`:
topology, shards, device taints, object names), validated once against every API limit
(`limits.py`) and rendered, purely, into Nodes, ResourceSlices (`drivers.py`: shaped like the
NVIDIA GPU DRA driver's and DRANet's) and DeviceClasses (`render.py`). `reconcile.py` makes the
cluster hold exactly those objects, writing only what `diff.py` finds different, and keeps the
applied spec in a record ConfigMap (`record.py`); `audit.py` checks the result and `status.py`
reports it. Two front ends sit on top: the `fleet` CLI (`cli.py` parses, `commands.py` runs:
render, apply, status, taint, delete) and `fleet serve` (`service.py`), which reconciles
`Fleet` custom resources (`crd.py`).

Layers (import-linter checks them): cli > commands > service > reconcile, crd > status >
audit, diff, metrics, yamlout, progress > render > drivers, record > layout > spec > profiles
> limits.
"""
