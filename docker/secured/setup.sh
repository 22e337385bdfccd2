#!/usr/bin/env bash
# Runs once the broker is up: a SCRAM user `alice` and the ACLs of each connector mode on topic `orders`
# (README, Security). Idempotent.
set -euo pipefail
bin=/opt/kafka/bin
admin=(--bootstrap-server kafka:19094 --command-config /setup/admin.properties)
"$bin/kafka-configs.sh" "${admin[@]}" --alter --entity-type users --entity-name alice \
  --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret]'
"$bin/kafka-topics.sh" "${admin[@]}" --create --if-not-exists --topic orders --partitions 4
acl() { "$bin/kafka-acls.sh" "${admin[@]}" --add --allow-principal User:alice "$@"; }
acl --operation READ --operation WRITE --topic orders                     # reads; writes (WRITE implies DESCRIBE)
acl --operation READ --group orders-app                                   # scan.startup.mode=group-offsets
acl --operation WRITE --transactional-id orders-eos- --resource-pattern-type prefixed  # exactly-once
acl --operation READ --group orders-eos- --resource-pattern-type prefixed             # its markers
echo "alice may read and write 'orders' (SCRAM-SHA-512 on localhost:9093 over TLS, localhost:9094 without)"
