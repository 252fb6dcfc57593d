"""dra-testbed's shared floor, which fleet, extender and loadgen stand on and nothing above.
It imports no service and no application (import-linter checks it).

- `vocab.py`: driver, attribute, label, annotation and taint names; API groups and versions.
- `wire.py`: the kube-scheduler extender's request and response models.
- `kube/`: the only Kubernetes client (client set-up, errors, list+watch, CRDs).
- `runtime.py`: the process plumbing every service runs on (event loop, stop signals, serving
  an aiohttp app, probes and /metrics, supervised tasks, progress bar, flag number types).
- `documents.py`: YAML/JSON files loaded with one-line errors; `validation.py`: pydantic
  errors as one-line messages naming the field.
- `units.py`: figures in the units people read; `charts.py`: plotly charts and
  self-contained HTML pages for the reports.
- `heartbeats.py`: whether a loadgen run recorded on its namespace is alive.
- `cluster/`: the embedded local control plane; `cli.py`: `testbed up|down|status` (and
  the commands applications register, such as `demo`).
"""
