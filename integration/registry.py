"""A real Schema Registry for tests and demos: Apicurio Registry 3 from Maven Central, in-memory storage,
whose Confluent-compatible API (what confluent-kafka's SchemaRegistryClient and our avro-confluent
format talk to) is at <url>/apis/ccompat/v7.

    python -m integration.registry start|stop|status

Apicurio 3 needs Java 21 or newer: JAVA_HOME, then `java` on the PATH, then the JDKs under
/usr/lib/jvm are tried. Test/dev tooling only: the product never imports this package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from integration.kafka import CACHE_DIR, fetch_maven_archive, free_port, log_excerpt
from integration.process import ServerProcess

APICURIO_VERSION = "3.3.3"
ARTIFACT = f"io.apicurio:apicurio-registry-app:{APICURIO_VERSION}:tar.gz:all"
STATE_FILE = CACHE_DIR / "registry.json"
CCOMPAT = "/apis/ccompat/v7"


def ensure_registry_app() -> Path:
    """The unpacked Apicurio app (holding quarkus-run.jar), fetched with Maven only when absent."""
    target = CACHE_DIR / f"apicurio-registry-{APICURIO_VERSION}"
    return fetch_maven_archive(ARTIFACT, target, "quarkus-run.jar", "mvn fetching Apicurio Registry")


def _java_version(java: Path) -> int:
    proc = subprocess.run([str(java), "-version"], capture_output=True, text=True, check=False)
    for token in proc.stderr.replace('"', " ").split():
        if token[:1].isdigit():
            return int(token.split(".")[0].split("-")[0].split("+")[0])
    return 0


def find_java(minimum: int = 21, who: str = f"Apicurio Registry {APICURIO_VERSION}") -> Path:
    """A java binary of at least `minimum` (Apicurio 3 is built for Java 21) for `who`, named in the error."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    candidates.append(Path("java"))
    candidates += sorted(Path("/usr/lib/jvm").glob("*/bin/java"), reverse=True)
    for java in candidates:
        try:
            if _java_version(java) >= minimum:
                return java
        except OSError:
            continue
    raise RuntimeError(
        f"{who} needs Java {minimum} or newer; none found (tried JAVA_HOME, "
        "java on the PATH and /usr/lib/jvm). Install one"
        + (", or set SCHEMA_REGISTRY_URL to a registry of yours." if who.startswith("Apicurio") else ".")
    )


class SchemaRegistryServer(ServerProcess):
    """Apicurio on 127.0.0.1 with free ports and in-memory storage; its log kept in the workdir. `properties` adds to
    (or overrides) its settings: `oidc_properties(keycloak)` turns its authentication on."""

    log_name = "registry.log"

    def __init__(self, workdir: Path | None = None, properties: Mapping[str, str] | None = None) -> None:
        super().__init__(Path(workdir or tempfile.mkdtemp(prefix="upsert-kafka-registry-")))
        self.properties = dict(properties or {})
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The Confluent-compatible API: what the avro-confluent format's 'url' option takes."""
        return self.base_url + CCOMPAT

    def start(self, timeout: float = 120, *, detach: bool = False) -> None:
        if self.is_running():
            raise RuntimeError(f"registry already running (pid {self.pid})")
        app, java = ensure_registry_app(), find_java()  # a first fetch may take minutes: not timed
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port, management = free_port(), free_port()
        settings = {
            "quarkus.http.host": "127.0.0.1",
            "quarkus.http.port": self.port,
            "quarkus.management.host": "127.0.0.1",
            "quarkus.management.port": management,
            "apicurio.storage.kind": "sql",
            "apicurio.storage.sql.kind": "h2",  # in memory: nothing outlives the process
            **self.properties,
        }
        cmd = [str(java), "-Xmx512m", *(f"-D{k}={v}" for k, v in settings.items()), "-jar", "quarkus-run.jar"]
        self._start_process(cmd, app, timeout, detach=detach)

    def _wait_ready(self, deadline: float) -> None:
        while self.is_running() and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/subjects", timeout=2) as r:
                    if r.status == 200:
                        return
            except urllib.error.HTTPError as e:
                if e.code == 401:  # its authentication is on: the registry serves, and refuses the anonymous probe
                    return
                time.sleep(0.3)
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        why = "did not answer in time" if self.is_running() else "exited"
        raise RuntimeError(f"Apicurio Registry {why}; log {self.log_path}:\n{log_excerpt(self.log_path)}")


def oidc_properties(issuer: str) -> dict[str, str]:
    """Apicurio's settings for its OIDC authentication against the realm at `issuer` (Keycloak's
    <url>/realms/<realm>): every API call needs a bearer token the realm signed, or HTTP basic credentials that
    Apicurio exchanges there for one as a client's id and secret (the client-credentials grant)."""
    return {
        "quarkus.oidc.tenant-enabled": "true",
        "quarkus.oidc.auth-server-url": issuer,
        # Apicurio's basic-auth exchange posts here itself (Quarkus discovers the rest from the issuer).
        "quarkus.oidc.token-path": f"{issuer}/protocol/openid-connect/token",
        "apicurio.authn.basic-client-credentials.enabled": "true",
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in ("start", "stop", "status"):
        print("usage: python -m integration.registry start|stop|status", file=sys.stderr)
        return 2
    try:
        state = json.loads(STATE_FILE.read_text())
        server = SchemaRegistryServer(Path(state["workdir"]))
        server.port, server._pid = int(state["port"]), int(state["pid"])
    except (OSError, ValueError, KeyError):
        server = None
    if args[0] == "start":
        if server is None or not server.is_running():
            server = SchemaRegistryServer()
            server.start(detach=True)
            state = {"pid": server.pid, "port": server.port, "workdir": str(server.workdir)}
            STATE_FILE.parent.mkdir(parents=True, exist_ok=True)
            STATE_FILE.write_text(json.dumps(state, indent=2) + "\n")
        print(f"Apicurio Registry {APICURIO_VERSION} up (pid {server.pid}), log {server.log_path}")
        print(f"export SCHEMA_REGISTRY_URL={server.url}")
        return 0
    if args[0] == "stop":
        if server is not None:
            server.stop()
            print(f"stopped; log kept in {server.log_path}")
        STATE_FILE.unlink(missing_ok=True)
        return 0
    up = server is not None and server.is_running()
    print(f"up: {server.url} (pid {server.pid})" if up else "down")
    return 0 if up else 1


if __name__ == "__main__":
    sys.exit(main())
