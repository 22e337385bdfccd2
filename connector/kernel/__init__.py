"""The kernel: what the formats and the connector both build on, below both and importing neither (nor pyspark): the
errors every option mistake raises, options declared once and typed, change kinds, redaction of secrets, and the clock
of the connector's timers. Its modules load by themselves: this package imports none of them."""
