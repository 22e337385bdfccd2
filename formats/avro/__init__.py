"""The avro family: `avro` (AvroCodec) and `avro-confluent` (AvroConfluentCodec), which the codec registry names by
module; this package imports neither, so that a format loads when first asked for."""
