"""scheduler_perf as a library beside loadgen: upstream's in-process scheduler benchmark
(k8s.io/kubernetes/test/integration/scheduler_perf), built per pinned release by
tools/k8s/scheduler-perf.sh and run on upstream's DRA workloads or on our fleet's shapes,
its results written as loadgen result files (`testbed perf`).

Layers (import-linter checks them): `cli.py` (`testbed perf`) > `session.py` (check the
release and workload, build, run, write) > `result.py` (runs as loadgen result files) >
`runner.py` (one run of the benchmark binary) > `build.py` (the release's benchmark) and
`fleetconfig.py` (our fleet as a workload) > the pure readers `workloads.py`,
`dataitems.py` (its DataItems JSON) and `table.py` (throughput per release).
"""
