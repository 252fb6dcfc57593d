"""The demo: the project's own comparisons (extender on/off, placement, fragmentation,
alignment, DRA vs device plugin, and the opt-in scale, sharing, extended-resource and
taints), a wing standing on the experiment engine and never under it.

- `plan.py`: its fleet variants, comparisons and arms (light: `testbed` loads it at start).
- `defaults.py`: its defaults, read from `demo.yaml`, the one place they are written.
- `wing.py`: the `Planner` it hands the runner, and its `builtin:` section (schema, checks).
- `summary.py`: its rows (A vs B over repeats); `project_targets.py` judges them against the
  project's targets, `dra_guide.py` against the DRA guide's matrix.
- `report.py`: its console tables, `demo.json` and `index.html`, and the `Reporter`.
- `command.py`: `testbed demo` (the built-in `demo.yaml` with the flags laid over it), and
  `WING`, what the demo registers with the engine's registry (`experiment.plan.wing`).
- `demo.yaml`: the built-in file (`testbed experiment run builtin:demo`).
"""
