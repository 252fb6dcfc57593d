"""The demo: the project's own comparisons (extender on/off, placement, fragmentation,
alignment, DRA vs device plugin, and the opt-in scale, sharing, extended-resource and
taints), a wing standing on the experiment engine and never under it.

- `plan.py`: its fleet variants, comparisons and arms (light: `testbed` loads it at start).
- `wing.py`: the `Planner` it hands the runner, and its reading of a file's `builtin:`.
- `summary.py`: its rows (A vs B over repeats); `project_targets.py` judges them against the
  project's targets, `dra_guide.py` against the DRA guide's matrix.
- `report.py`: its console tables, `demo.json` and `index.html`, and the `Reporter`.
- `command.py`: `testbed demo` (the built-in `demo.yaml` with the flags laid over it).
- `demo.yaml`: the built-in file (`testbed experiment run builtin:demo`).
"""
