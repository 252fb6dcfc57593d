"""A YAML (or JSON) document read from a file, with the one-line errors users see: which
file, and what is wrong with it (unreadable, not UTF-8, not YAML, nested too deeply).

Fleet specs, loadgen scenarios and experiment files all load through here, so a bad file
reads the same in every command; what the document must hold is each caller's own check.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from testbed import validation


class DocumentError(ValueError):
    """A file that cannot be read as a document; the message is one line naming the file."""


def load(path: str | Path, *, json_suffix: bool = False) -> Any:
    """The document in `path` (`-` reads stdin). YAML, unless `json_suffix` and the name
    ends in `.json` (JSON's parser is faster). Not libyaml's CSafeLoader: it is faster, but
    crashes the process on deep nesting."""
    try:
        text = sys.stdin.read() if str(path) == "-" else Path(path).read_text()
    except OSError as e:
        raise DocumentError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise DocumentError(
            f"{path}: not valid UTF-8 text ({e.reason} at byte {e.start})"
        ) from None
    kind = "YAML/JSON" if json_suffix else "YAML"
    try:
        if json_suffix and str(path).endswith(".json"):
            return json.loads(text)
        return yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as e:
        # ValueError: a scalar YAML reads but Python will not (a 5,000-digit integer).
        why = validation.syntax_error(e)  # keeps the line and column
        raise DocumentError(f"cannot read {path}: not valid {kind}: {why}") from None
    except RecursionError:  # both parsers recurse per nesting level
        raise DocumentError(f"cannot read {path}: not valid {kind}: too deeply nested") from None
