"""Modules that Spark's Python workers import by name (UDFs, partitioners, codecs, child apps)."""
