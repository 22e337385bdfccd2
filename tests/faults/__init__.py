"""Fault-injection tests against the real broker (issue 9, "Exactness"): task failures, query stops, killed
Python workers, a killed broker and a killed driver, each counting what was lost and what was duplicated."""
