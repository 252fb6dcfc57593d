"""dra-testbed's shared floor, which fleet, extender and loadgen stand on and nothing above:
the shared vocabulary (`vocab`), the extender wire models (`wire`), the only Kubernetes client
(`kube`), the process plumbing every service runs on (`runtime`), one-line validation messages
(`validation`), the embedded local control plane (`cluster`) and the `testbed` CLI. It imports
no service and no application (import-linter checks it)."""
