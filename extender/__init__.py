"""extender: a topology-aware kube-scheduler extender for DRA pods. README.md here says what
it does and, under Layout, which module holds what."""
