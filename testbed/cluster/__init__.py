"""The embedded local control plane: binaries built from pinned Go modules, run by kwokctl.

- `local.py`: `LocalCluster` (up, repair, status, down) and the pure kwokctl command.
- `binaries.py`: the versioned binary cache; `feature_gates.py`: gates per release;
  `paths.py`: where state and the repository's own files are.
- `ports.py`: free ports and the machine-wide port reservations; `locks.py`: start-up locks;
  `holds.py` and `in_use.py`: who still uses a cluster.
- `supervision.py`: the detached processes a cluster runs (pids, start, stop, logs);
  `health.py`: whether a component is its own, listening and healthy;
  `kwok_shards.py`: extra kwok controllers sharing the nodes; `etcd.py`: revision, compaction.
- `processes.py`: child processes for the length of a block (a service, a second scheduler);
  `second_scheduler.py`: a second kube-scheduler beside the cluster's own.
"""
