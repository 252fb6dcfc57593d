"""scheduler_perf as a library beside loadgen: upstream's in-process scheduler benchmark
(k8s.io/kubernetes/test/integration/scheduler_perf), built per pinned release by
tools/k8s/scheduler-perf.sh and run on upstream's DRA workloads or on our fleet's shapes,
its results written as loadgen result files (`testbed perf`).
"""
