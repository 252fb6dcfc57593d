"""The placement oracle (pure): the best placement that exists for an arm's workload on its
fleet, so every placement figure can be shown against a limit, not only against another placer.

    inputs.py    the fleet (from its ResourceSlices and Node labels) and the workload (from a
                 loadgen result's scenario and phase counts), as plain data
    patterns.py  what one node can hold: every multiset of pods that fits its devices (PCIe
                 roots, NUMA nodes), with the best alignment it allows
    solve.py     the MILPs (scipy's HiGHS, time-limited): the batch and the online optimum,
                 gangs' blocks and racks, and which demand does not fit
    arms.py      an arm's optima, metric by metric, and the check that no arm beats them

Nodes of one hardware shape (and, for gangs, one block or rack) are interchangeable: the
models count nodes per pattern, never name them, so 1,000 nodes are a few hundred variables.
It reads data only: the engine hands it the slices it already lists and the result loadgen
wrote, and it imports no service.
"""
