"""dra-testbed's shared floor: vocabulary, Kubernetes plumbing and the local cluster."""
