"""What an arm is and what it measured (the engine's bottom floor, pure but for reading files):
its record, its figures and whether it counts.

    arms.py             `Arm` (one loadgen run) and the latency arms' arrival rule
    arm_record.py       `ArmRecord`: an arm's loadgen result, parsed, and the engine's own
                        fields (process CPU, fault, optimum, validity), kept as arm.json
    fault_plan.py       a variant's fault: the spec's field, when it is due, what an arm keeps
    fleet_shape.py      what a fleet offers, read back from its ResourceSlices
    figures.py          the metric catalogue read from arm records; `Figure`
    intervals.py        medians, intervals and verdicts over repeats
    bandwidth_model.py  bus bandwidth priced from published NCCL figures
    accounting.py       whether an arm accounted for every pod it asked for
    validity.py         whether an arm ran as labelled (the extender answered)
    process_cpu.py      each process's CPU over an arm, kept in its record
"""
