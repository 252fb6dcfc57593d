"""The gang placer: gated gangs narrowed to the fewest topology blocks before scheduling."""
