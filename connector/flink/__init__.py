"""The Flink wing: `flink_table`, a Flink CREATE TABLE statement as this connector's options, and the statement's
hand-written reader (its clauses, its tokens and literals, Flink's types as Spark's). Imports neither read/ nor
write/. Its modules load by themselves: this package imports none of them (the package's own __init__ exports
flink_table and FlinkTable)."""
