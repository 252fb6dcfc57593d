"""Publishing, above the applications: the kept result documents behind every published
figure (docs/results/), and the pages written whole from them (`testbed results`).

    kept.py            kept documents: the compact, committed record behind each figure
    kept_baselines.py  kept scheduler_perf baselines and the threshold each would get
    kept_curves.py     kept cost curves (scheduler_perf's DRA workload sized to each fleet)
    perf_page.py       docs/results/scheduler-perf.md and its chart
    results_page.py    `testbed results`: BENCHMARKS.md and the topic index, and `keep`

It reads the engine's figures and intervals (`experiment`) and scheduler_perf's workloads and
curves (`schedperf`); neither application nor anything below imports it.
"""
