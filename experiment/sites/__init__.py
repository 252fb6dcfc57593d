"""Where and how an arm runs: the sites (a cluster and its schedulers), the services run as
child processes, faults made real, and the harnesses other than loadgen.

    site.py             the `Site` and `Scheduler` protocols: the seam between the runner and
                        the cluster under it
    local_site.py       the embedded local cluster as a site
    existing_site.py    an existing cluster as a site (what it creates, it deletes)
    cluster_objects.py  the objects a site applies (RBAC, second schedulers, kwok)
    children.py         the services' CLIs run as child processes
    fault_run.py        a variant's fault made real beside its arm
    in_process.py       `harness: scheduler_perf`: arms run in-process by upstream's benchmark
    clusterloader2.py   `harness: clusterloader2`: arms run by ClusterLoader2's DRA test
"""
