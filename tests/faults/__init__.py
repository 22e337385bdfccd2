"""Fault-injection tests against the real broker: task failures, query stops, killed
Python workers, a killed broker and a killed driver, each counting what was lost and what was duplicated."""
