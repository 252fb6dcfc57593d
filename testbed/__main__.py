"""`python -m testbed`: the `testbed` CLI."""

from testbed.cli import main

main()
