"""Helpers shared by the tests: Kafka I/O, read and write helpers, the schema registry fixtures."""
