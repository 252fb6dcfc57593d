"""The embedded local control plane: binaries built from pinned Go modules, run by kwokctl."""
