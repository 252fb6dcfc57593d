"""loadgen: fires DRA workloads at a cluster and measures them the way ClusterLoader2 and
scheduler_perf do (`loadgen`, `loadgen run SCENARIO`, `loadgen compare`, `loadgen observe`).

Modules, top to bottom (import-linter checks the layers):
- `cli.py`: the command line: flags in, handed to one of `commands/` (a run and observe,
  compare, the runs in a cluster and their clean-up, CPU profiles), which validates them.
- `runner.py` runs a scenario (the async API under the CLI, tests and benches);
  `observe.py` measures pods something else creates; `compare.py` sets two results side by
  side; `agreement.py` holds our startup figures against ClusterLoader2's.
- Its parts: `driver.py` creates objects at a controlled rate; `tracker.py` watches pods,
  claims and slices; `scrape.py` reads components' /metrics (`explaining.py` through the run);
  `inventory.py` lists, keeps alive and removes runs in a cluster; `report/` writes
  the JSON document, PerfData, CSV, console summary and HTML page.
- Plain data: `outcome.py` (a run's settings and result), `runs.py` (runs found in a
  cluster), `preflight.py`, `series.py` (Prometheus text as data), `segments.py` (counters
  over a component's processes, its restarts as facts), `slo.py`, `stall.py`,
  `progress.py`; what a run observed: `records.py` (the records), `watch_events.py` (the pure
  state machine updating them, one watch event at a time), `watch_gaps.py` (when a watch was
  broken), `fleet_views.py` and `gang_views.py` (the fleet's and the gangs' figures read
  from them).
- Pure core: `templates.py` (the objects a run creates), `placement.py` (alignment and gang
  span), `stats.py` (nearest-rank percentiles), `scenarios/` (named and YAML scenarios),
  `plan.py` (arrival schedules).
"""
