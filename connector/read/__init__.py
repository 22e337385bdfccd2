"""The read side: spec, offsets, planning, watermarks, the Spark source classes, fetch and decode."""
