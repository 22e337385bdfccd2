"""The key/value formats."""
