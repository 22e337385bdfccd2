"""The writer against the real broker."""
