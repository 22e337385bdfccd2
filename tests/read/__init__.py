"""The reader against the real broker."""
