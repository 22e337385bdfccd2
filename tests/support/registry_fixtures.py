"""The Schema Registry for the tests: SCHEMA_REGISTRY_URL when set, else an Apicurio Registry started for
the session (integration/registry.py); where a brand answers otherwise than Confluent's API documents (DEVIATIONS);
and a gate in front of it that checks credentials and serves TLS, for the registry client's auth and TLS settings
(Apicurio itself only authenticates through OIDC)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import ssl
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.servers import started


@pytest.fixture(scope="session")
def registry_url() -> Iterator[str]:
    """The Confluent-compatible API of a real schema registry (what the avro-confluent 'url' takes)."""
    given = os.environ.get("SCHEMA_REGISTRY_URL")
    if given:
        yield given
        return
    from integration.registry import SchemaRegistryServer

    with started("Schema registry", SchemaRegistryServer()) as server:
        yield server.url


# -- what a registry answers: Confluent's API reference, and a brand's known deviations from it -----------------


@dataclass(frozen=True)
class Answer:
    """A registry's refusal: its HTTP status and the error code of its body (Confluent's API reference lists both)."""

    status: int
    code: int


# Requests some registry answers otherwise than Confluent's API reference (and Confluent's registry) does.
# Documented: 200 with is_compatible false (Confluent: "Incompatible because of different schema type").
CHECK_OF_ANOTHER_TYPE = (
    "POST /compatibility/subjects/<subject>/versions/latest, a schema of another type than the subject's"
)
# Documented: 200 with the schema as a serialized file descriptor (what Confluent's ProtobufDeserializer asks for).
SERIALIZED_PROTOBUF = (
    "GET /schemas/ids/<id>?format=serialized, a Protobuf schema registered as a serialized descriptor (as "
    "confluent-kafka's ProtobufSerializer registers it)"
)

# Each brand's known deviations, stated here once (by the name its own API gives itself). A test asserts what
# Confluent's API documents, within `Registry.as_documented`, which takes a brand's stated answer in its place:
# such a test passes on a registry that answers as documented (Confluent's, a fixed Apicurio) and fails on any
# other answer (a refused connection, another error).
DEVIATIONS: dict[str, dict[str, Answer]] = {
    "Apicurio Registry": {  # 3.3.3, the session's registry unless SCHEMA_REGISTRY_URL names another
        CHECK_OF_ANOTHER_TYPE: Answer(422, 42201),  # it parses the schema as one of the subject's type
        # It parses the registered descriptor as .proto text ("Syntax error in Order.proto"), with no error code.
        SERIALIZED_PROTOBUF: Answer(500, 0),
    },
}


@dataclass(frozen=True)
class Registry:
    """The session's schema registry: its Confluent-compatible API and its brand (None: one that does not name
    itself, as Confluent's does not)."""

    url: str
    brand: str | None

    @contextlib.contextmanager
    def as_documented(self, request: str) -> Iterator[None]:
        """The block asserts what Confluent's API documents for `request`; where this registry's brand is known to
        answer it otherwise (DEVIATIONS), the block may fail with exactly that answer instead."""
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        deviation = DEVIATIONS.get(self.brand or "", {}).get(request)
        try:
            yield
        except SchemaRegistryError as e:
            if deviation is None or Answer(e.http_status_code, e.error_code) != deviation:
                raise


@pytest.fixture(scope="session")
def registry_api(registry_url: str) -> Registry:
    """The session's registry with its brand, as Apicurio names itself (GET /apis/registry/v3/system/info)."""
    origin = registry_url.partition("/apis/")[0]
    try:
        with urllib.request.urlopen(f"{origin}/apis/registry/v3/system/info", timeout=10) as answer:
            name = json.loads(answer.read()).get("name", "")
    except (OSError, ValueError):  # no such API: a registry of another brand
        name = ""
    brand = next((b for b in DEVIATIONS if name.startswith(b)), None)
    return Registry(registry_url, brand)


# -- a registry that checks credentials itself: Apicurio with its OIDC authentication on, against Keycloak ----------


@dataclass(frozen=True)
class AuthenticatedRegistry:
    """The Confluent-compatible API of a registry that refuses any request without a valid credential: HTTP basic
    `client_id:secret` (a Keycloak client's, which the registry exchanges for a token) or a bearer token
    (`token()`: a fresh one from Keycloak's token endpoint)."""

    url: str
    client_id: str
    secret: str = field(repr=False)
    token: Callable[[], str] = field(repr=False)

    @property
    def origin(self) -> str:
        return self.url.partition("/apis/")[0]


@pytest.fixture(scope="session")
def authenticated_registry() -> Iterator[AuthenticatedRegistry]:
    """Keycloak and an Apicurio that authenticates through it, started on first use (about half a minute) and
    stopped at the session's end; their client's secret made at random."""
    from integration.keycloak import KeycloakServer
    from integration.registry import SchemaRegistryServer, oidc_properties

    client_id, secret = "registry-client", secrets.token_urlsafe(16)
    with (
        started("Keycloak", KeycloakServer({client_id: secret})) as keycloak,
        started(
            "Schema registry with authentication", SchemaRegistryServer(properties=oidc_properties(keycloak.issuer))
        ) as registry,
    ):
        yield AuthenticatedRegistry(
            registry.url, client_id, secret, lambda: keycloak.client_credentials_token(client_id, secret)
        )


# -- a gate in front of the real registry: checks credentials, serves TLS, counts requests ----------


@dataclass
class RegistryGate:
    """What reached the registry through the gate: (method, path, Authorization header) per request."""

    url: str
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)

    @property
    def origin(self) -> str:
        """scheme://host:port"""
        return self.url.partition("/apis/")[0]


# A request to `<gate>/moved/<path>` is redirected to `<gate>/<path>`: a redirect within the origin.
MOVED = "/moved"


def _forwarding_handler(target: str, gate: RegistryGate, authorization: str | None, redirect_to: str | None) -> type:
    class Handler(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            auth = self.headers.get("Authorization")
            gate.requests.append((self.command, self.path, auth))
            if redirect_to is not None or self.path.startswith(MOVED + "/"):
                # 307 keeps the method and the body (a POST stays a POST).
                location = redirect_to + self.path if redirect_to is not None else self.path[len(MOVED) :]
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(307)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if authorization is not None and auth != authorization:
                self._answer(401, b'{"error_code":401,"message":"Unauthorized"}')
                return
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
            request = urllib.request.Request(target + self.path, data=body, method=self.command)
            for name in ("Content-Type", "Accept"):
                if self.headers.get(name):
                    request.add_header(name, self.headers[name])
            try:
                with urllib.request.urlopen(request, timeout=30) as r:
                    self._answer(r.status, r.read())
            except urllib.error.HTTPError as e:
                self._answer(e.code, e.read())

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _forward

        def log_message(self, *args: object) -> None:  # quiet
            pass

    return Handler


@pytest.fixture
def registry_gate(registry_url: str) -> Iterator[Callable[..., RegistryGate]]:
    """Start a gate to the real registry: `registry_gate(authorization="Basic ...", tls=certs)`. With
    `redirect_to="http://host:port"` the gate forwards nothing: it redirects every request (HTTP 307) to the same
    path there. Any gate redirects `/moved/<path>` to its own `/<path>`."""
    servers = []

    def start(
        authorization: str | None = None, tls: TlsFiles | None = None, redirect_to: str | None = None
    ) -> RegistryGate:
        base, _, api = registry_url.partition("/apis/")
        server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
        scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls.server_cert, tls.server_key)
            context.load_verify_locations(tls.ca)
            context.verify_mode = ssl.CERT_REQUIRED  # mutual TLS: the client must show its certificate
            server.socket = context.wrap_socket(server.socket, server_side=True)
            scheme = "https"
        gate = RegistryGate(f"{scheme}://127.0.0.1:{server.server_address[1]}/apis/{api}")
        server.RequestHandlerClass = _forwarding_handler(base, gate, authorization, redirect_to)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return gate

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@dataclass(frozen=True)
class TlsFiles:
    ca: str  # the CA that signed both certificates (the client's truststore)
    server_cert: str
    server_key: str
    client_pem: str  # the client's certificate and its key, encrypted with key_password
    key_password: str


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, made with the openssl CLI."""
    d = tmp_path_factory.mktemp("tls")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=upsert-kafka test CA",
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name in ("server", "client"):
        openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            f"/CN={name}",
        )
        openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.pem",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        )
    openssl("pkey", "-in", "client.key", "-aes256", "-passout", "pass:key-s3cret", "-out", "client.enc.key")
    (d / "client-bundle.pem").write_bytes((d / "client.pem").read_bytes() + (d / "client.enc.key").read_bytes())
    return TlsFiles(
        ca=str(d / "ca.pem"),
        server_cert=str(d / "server.pem"),
        server_key=str(d / "server.key"),
        client_pem=str(d / "client-bundle.pem"),
        key_password="key-s3cret",
    )


def registered_class(client, subject: str) -> type:
    """The message type a protobuf-confluent subject's latest schema defines (its message `Row`), as a Confluent
    deserializer's reader would build it."""
    import base64

    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

    file = descriptor_pb2.FileDescriptorProto.FromString(
        base64.b64decode(client.get_latest_version(subject).schema.schema_str)
    )
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("Row"))


# -- golden corpora written against another registry -----------------------------------------------------------------


def register_golden(registry_url: str, entries: list[dict], subject_of: Callable[[str], str]) -> dict[int, int]:
    """A golden corpus's schemas (each {subject, id, schema, references: [[name, subject, version]], type
    (default PROTOBUF)}, references first) registered here, each under `subject_of(its subject)`: the corpus's ids
    -> the ids this registry gave (with_id puts them into the payloads' framing)."""
    from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient

    client = SchemaRegistryClient({"url": registry_url, "timeout": 20})
    versions: dict[str, int] = {}
    ids = {}
    for entry in entries:
        subject = subject_of(entry["subject"])
        refs = [
            SchemaReference(name, subject_of(ref), versions[subject_of(ref)]) for name, ref, _ in entry["references"]
        ]
        schema = Schema(entry["schema"], entry.get("type", "PROTOBUF"), refs)
        ids[entry["id"]] = client.register_schema(subject, schema)
        versions[subject] = client.lookup_schema(subject, schema).version
    return ids


def with_id(payload: bytes, ids: dict[int, int]) -> bytes:
    """A payload in Confluent's framing (magic byte, 4-byte schema id) with its id mapped through `ids`."""
    return payload[:1] + ids[int.from_bytes(payload[1:5], "big")].to_bytes(4, "big") + payload[5:]
