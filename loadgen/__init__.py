"""loadgen."""
