# For mypy only: a bench run as `python bench/NAME.py` imports `common` from its own folder;
# this says that module is `bench.common` (its `__all__`), so the calls into it are checked.
from bench.common import *  # noqa: F403
