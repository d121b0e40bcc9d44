"""The Python half of tracing without code changes: `gwtrace run` and `gwtrace span`."""
