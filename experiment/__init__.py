"""Experiments above the three services: a fleet, variants, workloads and repeats, run through
the services' CLIs and public APIs, and the comparison report. `testbed demo` is the built-in one.

Two floors, and the commands over both (the `experiment.*` contracts in pyproject.toml hold
each to its place):

    cli.py               `testbed demo`, `testbed experiment run|validate`, `testbed report`:
                         registers the wings with the engine's registry
    ───────────────────────────────────────────────────────────────────────────────────────
    demo/                the demo wing, standing on the engine:
      plan.py              its fleet variants, comparisons and arms
      defaults.py          its defaults, read from demo.yaml (the one place they are written)
      wing.py              its Planner; its `builtin:` section's schema, workload and checks
      summary.py           its rows (A vs B over repeats)
      project_targets.py   the project's targets judged on those rows
      dra_guide.py         the DRA guide's matrix judged on them
      report.py            its console tables, demo.json and index.html; its Reporter
      command.py           `testbed demo`'s file (the built-in one, flags laid over it); WING,
                           what the demo registers
      demo.yaml            the built-in file (`builtin:demo`)
    ───────────────────────────────────────────────────────────────────────────────────────
    the engine, which never imports nor names the demo:
      spec.py              experiment files: parsing and checks (one line naming the field)
      wing.py              the registry of wings, and the Planner and Reporter a wing hands
                           the runner
      runner.py            a run end to end: sites, fleet, schedulers, arms, then the report
      matrix.py            a file's variants x workloads in stages; the engine's Planner
      comparison.py        a file's variants compared metric by metric; release to release
      variants_report.py   a file's console tables, experiment.json and index.html; Reporter
      arms.py              `Arm` (one loadgen run) and the latency arms' arrival rule
      arm_record.py        `ArmRecord`: an arm's loadgen result, parsed, and the engine's own
                           fields (process CPU, fault, optimum, validity), kept as arm.json
      figures.py           the metric catalogue read from arm records; `Figure`
      accounting.py        whether an arm accounted for every pod it asked for
      arm_charts.py        charts and sections every report shares
      report_files.py      the JSON document and index.html every report writes
      intervals.py         medians, intervals and verdicts over repeats
      validity.py          whether an arm ran as labelled (the extender answered)
      fleet_shape.py       what a fleet offers, read back from its ResourceSlices
      mixed_fleet.py       the mixed fleet `fleet.profile: demo` names
      bandwidth_model.py   bus bandwidth priced from published NCCL figures
      oracle/              the placement optimum of an arm's workload on its fleet (MILP)
      optimum_report.py    each placement arm against its optimum, in every report
      site.py              where a run happens: the `Site` and `Scheduler` protocols
      local_site.py        the embedded local cluster as a site
      existing_site.py     an existing cluster as a site (what it creates, it deletes)
      cluster_objects.py   the objects a site applies (RBAC, second schedulers, kwok)
      children.py          the services' CLIs run as child processes
"""
