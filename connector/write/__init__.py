"""The write side: spec, the Spark sink classes, the task, the reducing buffer, the producer, transactions,
overwrite."""
