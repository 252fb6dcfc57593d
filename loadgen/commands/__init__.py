"""loadgen's subcommands, one concern each; `loadgen.cli` parses the flags and hands the
options to one of them.

- `measure.py`: `loadgen [run]` (create a scenario's pods and measure them) and `loadgen
  observe` (measure pods another tool creates): both write a run's reports.
- `comparison.py`: `loadgen compare` (two result documents side by side).
- `cluster_runs.py`: `loadgen runs` and `loadgen cleanup` (runs left in a cluster).
- `cpu_profile.py`: `loadgen cpu` (pprof CPU profiles by category).
- `common.py`: exit codes, the usage error and the run-id rule they share.
"""
