"""Pure logic: option parsing, the retry policy, the client pool; no broker, no SparkSession (the `unit` group)."""
