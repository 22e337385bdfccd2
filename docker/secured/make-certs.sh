#!/usr/bin/env bash
# A throwaway CA and the broker's key and certificate for docker-compose.secured.yml, in docker/secured/certs/
# (git-ignored). The certificate names localhost and 127.0.0.1: clients verify the host name by default.
set -euo pipefail
cd "$(dirname "$0")" && mkdir -p certs && cd certs
key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${key[@]}" -keyout ca.key -out ca.pem -days 30 -subj "/CN=upsert-kafka dev CA"
openssl req "${key[@]}" -keyout broker.key -out broker.csr -subj "/CN=localhost"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > san.ext
openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out broker.crt -days 30 -extfile san.ext
# Kafka's PEM keystore: the private key and the certificate chain in one file.
cat broker.key broker.crt ca.pem > broker.pem
chmod 644 broker.pem ca.pem
echo "CA for clients (properties.ssl.ca.location): $(pwd)/ca.pem"
