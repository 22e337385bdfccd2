"""The topic as a table inside a stream (Flink's table view of an upsert source): the normalized changelog,
aggregations that retract, temporal joins. Each keeps its state in Spark's state store."""
