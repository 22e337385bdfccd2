"""The schema registry client's credentials against a registry that checks them itself (Apicurio with its OIDC
authentication on, against Keycloak): a Keycloak client's id and secret as basic auth, a token from Keycloak's token
endpoint as bearer auth; a wrong one, or none, is refused with HTTP 401. Through a gate of ours (what only a proxy
shows): the client never sends the credentials to another host (a redirect to another origin, or from https to http,
arrives without the Authorization header; one within the origin keeps it). Certificate verification is on unless a
CA is given; credentials never show in an error or a repr."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from pyspark_upsert_kafka.formats import CodecContext, make_codec
from pyspark_upsert_kafka.formats.confluent.registry import RegistryError

from tests.support.registry_fixtures import MOVED, AuthenticatedRegistry

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string())])
BATCH = pa.RecordBatch.from_pylist([{"id": 1, "name": "a"}, {"id": 2, "name": None}], schema=SCHEMA)
VALUE = CodecContext("value", ("t",))
USER_INFO = {"basic-auth.user-info": "reg-user:reg-s3cret"}
AUTHORIZATION = "Basic cmVnLXVzZXI6cmVnLXMzY3JldA=="  # reg-user:reg-s3cret


def codec(url: str, **options: str):
    return make_codec("avro-confluent", "value.format", {"url": url, **options}, VALUE)


def user_info(registry: AuthenticatedRegistry, secret: str | None = None) -> dict[str, str]:
    return {
        "basic-auth.credentials-source": "USER_INFO",
        "basic-auth.user-info": f"{registry.client_id}:{registry.secret if secret is None else secret}",
    }


def subject() -> str:
    return f"auth-{uuid.uuid4().hex}"


def test_avro_confluent_writes_and_reads_with_a_clients_basic_auth_user_info(authenticated_registry):
    fmt = codec(authenticated_registry.url, subject=subject(), **user_info(authenticated_registry))

    payloads = fmt.encoder(SCHEMA).encode(BATCH)  # registers the schema: a write the registry allowed

    assert fmt.decoder(SCHEMA).decode(payloads).batch.to_pylist() == BATCH.to_pylist()
    assert authenticated_registry.secret not in repr(fmt)


def test_a_wrong_secret_fails_with_http_401_naming_the_options_and_never_shows(authenticated_registry):
    bad = codec(authenticated_registry.url, subject=subject(), **user_info(authenticated_registry, "wr0ng-s3cret"))

    with pytest.raises(RegistryError, match=r"HTTP 401 .*basic-auth / bearer-auth") as err:
        bad.encoder(SCHEMA)

    assert authenticated_registry.origin in str(err.value)
    assert not any("wr0ng-s3cret" in text for text in (str(err.value), repr(err.value), repr(bad)))


def test_a_bearer_token_from_the_token_endpoint_reads_and_writes_and_a_garbage_one_gets_http_401(
    authenticated_registry,
):
    written_ = codec(authenticated_registry.url, subject=subject(), **user_info(authenticated_registry))
    payloads = written_.encoder(SCHEMA).encode(BATCH)
    token = authenticated_registry.token()
    bearer = {"bearer-auth.credentials-source": "STATIC_TOKEN", "bearer-auth.token": token}
    fmt = codec(authenticated_registry.url, subject=subject(), **bearer)

    # Another client than the writer's (other settings): the writer schema is fetched with the token.
    assert fmt.decoder(SCHEMA).decode(payloads).batch.to_pylist() == BATCH.to_pylist()
    assert len(fmt.encoder(SCHEMA).encode(BATCH)) == 2
    assert token not in repr(fmt)
    garbage = codec(authenticated_registry.url, subject=subject(), **{"bearer-auth.token": "garbage-t0ken"})
    with pytest.raises(RegistryError, match=r"HTTP 401 .*basic-auth / bearer-auth") as err:
        garbage.encoder(SCHEMA)
    assert "garbage-t0ken" not in str(err.value)


def test_no_credentials_at_all_get_http_401(authenticated_registry):
    with pytest.raises(RegistryError, match=r"HTTP 401 .*basic-auth / bearer-auth"):
        codec(authenticated_registry.url, subject=subject()).encoder(SCHEMA)


def written(registry_url: str) -> list[bytes]:
    """Two records written straight to the real registry's subject (no gate)."""
    return codec(registry_url, subject=f"redirect-{uuid.uuid4().hex}").encoder(SCHEMA).encode(BATCH)


def test_redirect_to_another_origin_arrives_without_the_authorization_header(registry_gate, registry_url):
    payloads = written(registry_url)
    other = registry_gate()  # another port: another origin
    redirector = registry_gate(redirect_to=other.origin)

    decoded = codec(redirector.url, **USER_INFO).decoder(SCHEMA).decode(payloads)

    assert decoded.batch.to_pylist() == BATCH.to_pylist()  # the redirect was followed
    # Sent to the configured origin only (the subject's latest, then the writer schema: each request redirected).
    assert redirector.requests and {auth for *_, auth in redirector.requests} == {AUTHORIZATION}
    assert other.requests and all(auth is None for *_, auth in other.requests), other.requests


def test_redirect_from_https_to_http_arrives_without_the_authorization_header(registry_gate, registry_url, tls_files):
    payloads = written(registry_url)
    plain = registry_gate()
    redirector = registry_gate(tls=tls_files, redirect_to=plain.origin)
    tls = {"ssl.truststore.location": tls_files.ca, "ssl.keystore.location": tls_files.client_pem,
           "ssl.keystore.password": tls_files.key_password}  # fmt: skip

    decoded = codec(redirector.url, **USER_INFO, **tls).decoder(SCHEMA).decode(payloads)

    assert decoded.batch.to_pylist() == BATCH.to_pylist()
    assert redirector.requests and redirector.requests[0][2] == AUTHORIZATION
    assert plain.requests and all(auth is None for *_, auth in plain.requests), plain.requests


def test_redirect_within_the_origin_keeps_the_authorization_header(registry_gate):
    gate = registry_gate(authorization=AUTHORIZATION)  # refuses any request without it
    moved = gate.origin + MOVED + gate.url[len(gate.origin) :]

    written_ = codec(moved, subject=f"moved-{uuid.uuid4().hex}", **USER_INFO).encoder(SCHEMA).encode(BATCH)

    assert len(written_) == 2
    assert [(m, p.startswith(MOVED), auth) for m, p, auth in gate.requests] == [
        ("POST", True, AUTHORIZATION),
        ("POST", False, AUTHORIZATION),
    ]


def test_certificate_verification_is_on_by_default_and_names_the_truststore_option(registry_gate, tls_files):
    gate = registry_gate(tls=tls_files)  # its certificate is signed by the test CA, which no default store holds

    with pytest.raises(RegistryError) as err:
        codec(gate.url, **USER_INFO, subject="x").encoder(SCHEMA)

    message = str(err.value)
    assert "certificate" in message and "ssl.truststore.location" in message, message
    assert gate.requests == []  # the handshake failed: no request (and no credential) was sent
    assert "reg-s3cret" not in message


def test_credentials_in_the_url_never_show_in_errors_or_reprs(authenticated_registry):
    url = authenticated_registry.url.replace("http://", f"http://{authenticated_registry.client_id}:url-s3cret@")
    bad = codec(url, subject="x")

    with pytest.raises(RegistryError, match="HTTP 401") as err:
        bad.encoder(SCHEMA)

    assert "url-s3cret" not in str(err.value) and "url-s3cret" not in repr(bad)
    assert authenticated_registry.origin in str(err.value)  # the registry is named, without its credentials


def test_credentials_in_an_ipv6_url_are_split_off_and_the_host_kept():
    from pyspark_upsert_kafka.formats.confluent.registry import split_credentials

    assert split_credentials("https://u:p%40ss@[::1]:8081/apis/ccompat/v7/") == (
        "https://[::1]:8081/apis/ccompat/v7",
        "u:p@ss",
    )
    assert split_credentials("http://[fe80::2]:80/x") == ("http://[fe80::2]:80/x", None)


def test_protobuf_confluent_keeps_registry_credentials_out_of_errors_reprs_and_record_errors(authenticated_registry):
    url = authenticated_registry.url.replace("http://", "http://reg-user:url-s3cret@")
    fmt = make_codec("protobuf-confluent", "value.format", {"url": url, "basic-auth.user-info": "u:pw-s3cret"}, VALUE)

    with pytest.raises(RegistryError, match="HTTP 401") as err:  # the registry refuses us: the task fails
        fmt.decoder(SCHEMA).decode([b"\x00\x00\x00\x00\x01\x00\x08\x01"])

    assert authenticated_registry.origin in str(err.value)
    assert not any(s in text for s in ("url-s3cret", "pw-s3cret") for text in (str(err.value), repr(fmt)))
