"""extender."""
