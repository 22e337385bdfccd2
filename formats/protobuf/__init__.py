"""The protobuf family: `protobuf` (ProtobufCodec) and `protobuf-confluent` (ProtobufConfluentCodec), which the codec
registry names by module; this package imports neither, so that a format loads when first asked for."""
