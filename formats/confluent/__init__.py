"""The Confluent schema registry, as every registry format uses it: the wire header, the registry client, its errors
and the codec base class (registry options, subjects and their checks). The formats themselves live with their
families (avro/, json/, protobuf/, cdc/). Its modules load when a registry format is first asked for."""
