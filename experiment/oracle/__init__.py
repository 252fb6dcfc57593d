"""The placement optimum, in one place: the oracle (pure), the best placement that exists for an
arm's workload on its fleet, so every placement figure can be shown against a limit, not only
against another placer; where an arm falls short of it; and each placement arm against it in
every report.

    inputs.py    the fleet (from its ResourceSlices and Node labels) and the workload (from a
                 loadgen result's scenario and phase counts), as plain data
    patterns.py  what one node can hold: every multiset of pods that fits its devices (PCIe
                 roots, NUMA nodes), with the best alignment it allows
    solve.py     the MILPs (scipy's HiGHS, time-limited): the batch and the online optimum,
                 gangs' blocks and racks, and which demand does not fit
    arms.py      an arm's optima, metric by metric, and the check that no arm beats them

    optimum_losses.py  where an arm falls short of its online optimum: the decisions that
                       lost the difference (pure, from the arm's record)
    optimum_report.py  each placement arm against its optimum: computed once per arm beside
                       its result (optimum.json), then one table over the repeats on the
                       console, in the run's JSON document and on its page

Nodes of one hardware shape (and, for gangs, one block or rack) are interchangeable: the
models count nodes per pattern, never name them, so 1,000 nodes are a few hundred variables.
The oracle reads data only: the engine hands it the slices it already lists and the result
loadgen wrote, and it imports no service.
"""
