"""The json family: `json` (JsonCodec) and `json-confluent` (JsonConfluentCodec), which the codec registry names by
module; this package imports neither, so that a format loads when first asked for."""
