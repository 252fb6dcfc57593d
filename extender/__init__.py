"""extender: a topology-aware kube-scheduler extender for DRA pods (see README.md here)."""
