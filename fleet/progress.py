"""What an apply or a delete reports while it runs (`Progress`) and what it wrote (`Counts`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class Progress(Protocol):
    """What the CLI's progress bar (or the service's status writer) is told."""

    def phase(self, description: str, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...

    def set_done(self, done: int) -> None: ...


class NoProgress:
    def phase(self, description: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def set_done(self, done: int) -> None:
        pass


@dataclass(slots=True)
class Counts:
    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0
    first_error: str = ""
    counted: set[str] = field(default_factory=set, repr=False)
    """`kind/name` of objects counted so far, written or found matching: a pass resumed after
    an outage finds them matching again (and a pass cut short may have counted some), and
    must count each object once."""

    @property
    def writes(self) -> int:
        return self.created + self.updated + self.deleted

    def wrote(self, kind: str, action: str, name: str = "") -> None:
        """One object `action` (created, updated or deleted); `name` for those that stay."""
        setattr(self, action, getattr(self, action) + 1)
        if name:
            self.counted.add(f"{kind}/{name}")

    def same(self, kind: str, name: str) -> None:
        """`name` already matched (counted unless an earlier pass of this apply counted it)."""
        key = f"{kind}/{name}"
        if key not in self.counted:
            self.counted.add(key)
            self.unchanged += 1
