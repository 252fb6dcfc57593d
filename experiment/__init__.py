"""Experiments above the three services: a fleet, variants, workloads and repeats, run through
the services' CLIs and public APIs, and the comparison report. `testbed demo` is the built-in one.

Floors, top to bottom, each importing only those below it (the `experiment.*` contracts in
pyproject.toml hold each to its place):

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
      run/                 a run end to end: sites, fleet, schedulers, arms, then the report
      report/              a file's console tables, experiment.json and index.html (its
                           Reporter), the files and charts every report shares, and
                           `testbed report`'s rebuild
      plan/                a file's variants x workloads in stages (the engine's Planner), its
                           design (paired repeats, each look's level), and the registry of
                           wings with the Planner and Reporter a wing hands the runner
      spec/                experiment files: parsing and checks (one line naming the field),
                           and the mixed fleet `fleet.profile: demo` names
      sites/ | judge/ | oracle/, independent of each other:
        sites/             where and how an arm runs: the `Site` and `Scheduler` protocols,
                           the local and an existing cluster, the objects a site applies, the
                           services' CLIs as child processes, faults made real, and the
                           scheduler_perf and ClusterLoader2 harnesses
        judge/             a file's variants compared metric by metric, and its targets
        oracle/            the placement optimum of an arm's workload on its fleet (MILP),
                           where an arm falls short of it, and each placement arm against it
                           in every report
      measure/             what an arm is and what it measured: `Arm`, `ArmRecord` (kept as
                           arm.json), the metric catalogue (`Figure`), medians, intervals and
                           verdicts over repeats, the fault's plan, the fleet's shape, the
                           bandwidth model, accounting, validity and process CPU

Publishing (the kept documents and the pages `testbed results` writes from them) stands on
top, in its own package (`publish`).
"""
