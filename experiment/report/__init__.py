"""A run's report: its console tables, JSON document and pages, and `testbed report`.

    variants_report.py  a file's console tables, experiment.json and index.html; Reporter
    report_files.py     the JSON document and index.html every report writes
    arm_charts.py       charts and sections every report shares
    rebuild.py          `testbed report DIR`: a results directory's pages rebuilt from its JSON

An old run rebuilt gets today's pages, drawn by the writers the runs use; its JSON is left as is.
"""
