"""Built-in experiment files shipped with the package (`spec.builtin(NAME)`)."""
