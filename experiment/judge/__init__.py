"""An experiment file's variants judged against each other, over the figures `measure` reads.

    comparison.py  a file's variants compared metric by metric; release to release
    targets.py     a file's targets: a metric's ratio of one variant to another against a
                   threshold, with the paired intervals

Both pure: they read figures and intervals, never a cluster.
"""
