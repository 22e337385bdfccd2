"""A real OpenID Connect server for tests: Keycloak from Maven Central (its Quarkus distribution), in dev mode with
an in-memory database, holding one realm of confidential clients (client id + secret, service accounts on) that
sign in with the client-credentials grant. The registry's auth tests run Apicurio Registry against it
(integration/registry.py with its OIDC authentication on).

Keycloak 26 needs Java 21 or newer (found as for Apicurio: integration/registry.py's find_java). Each server runs a
copy of the cached distribution in its workdir: Keycloak writes into its home (data/, the realm to import), and
test sessions run side by side. Test/dev tooling only: the product never imports this package.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from integration.kafka import CACHE_DIR, fetch_maven_archive, free_ports, log_excerpt
from integration.process import ServerProcess
from integration.registry import find_java

KEYCLOAK_VERSION = "26.7.3"
ARTIFACT = f"org.keycloak:keycloak-quarkus-dist:{KEYCLOAK_VERSION}:zip"
REALM = "upsert-kafka"
# Build-time options: a start with other ones rebuilds the server first (Quarkus augmentation, ~30 s of CPU).
BUILD_OPTIONS = ("--db=dev-mem",)  # in memory: nothing outlives the process
# What the distribution's cached copy holds once its dev-mode build is done (a fetch interrupted before lacks it).
_BUILT = ".dev-built"


def ensure_keycloak() -> Path:
    """The Keycloak distribution (holding bin/kc.sh), built for dev mode; fetched with Maven only when absent."""

    def build(unpacked: Path) -> None:
        # The distribution is built for production mode; one dev-mode start in place rebuilds it, once per cache.
        server = KeycloakServer({}, workdir=unpacked.parent, home=unpacked)
        server.start(timeout=600)
        server.stop()
        shutil.rmtree(unpacked / "data", ignore_errors=True)
        (unpacked / _BUILT).touch()

    target = CACHE_DIR / f"keycloak-{KEYCLOAK_VERSION}"
    return fetch_maven_archive(ARTIFACT, target, "bin/kc.sh", "mvn fetching Keycloak", build, done=_BUILT)


def realm(clients: Mapping[str, str]) -> dict[str, object]:
    """The realm REALM with a confidential client per (client id, secret), each signing in as its service account."""
    return {
        "realm": REALM,
        "enabled": True,
        "clients": [
            {
                "clientId": client_id,
                "enabled": True,
                "publicClient": False,
                "clientAuthenticatorType": "client-secret",
                "secret": secret,
                "serviceAccountsEnabled": True,
                "standardFlowEnabled": False,
                "directAccessGrantsEnabled": False,
            }
            for client_id, secret in clients.items()
        ],
    }


class KeycloakServer(ServerProcess):
    """Keycloak on 127.0.0.1 with free ports (below the ephemeral range), in dev mode, the realm REALM imported with
    the given clients (client id -> secret) at its start; its log kept in the workdir."""

    log_name = "keycloak.log"

    def __init__(self, clients: Mapping[str, str], workdir: Path | None = None, home: Path | None = None) -> None:
        super().__init__(Path(workdir or tempfile.mkdtemp(prefix="upsert-kafka-keycloak-")))
        self.clients = dict(clients)
        self._home = home  # run in place (the one-off dev-mode build), not in a copy of the cached distribution
        self.port = 0

    def __repr__(self) -> str:  # never the clients' secrets
        return f"KeycloakServer(port={self.port}, clients={sorted(self.clients)})"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def issuer(self) -> str:
        """The realm's URL: what an OIDC client (Quarkus' auth-server-url) discovers the rest from."""
        return f"{self.base_url}/realms/{REALM}"

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/token"

    def start(self, timeout: float = 180) -> None:
        if self.is_running():
            raise RuntimeError(f"Keycloak already running (pid {self.pid})")
        java = find_java(who=f"Keycloak {KEYCLOAK_VERSION}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        home = self._home
        if home is None:
            home = self.workdir / "keycloak"
            shutil.rmtree(home, ignore_errors=True)
            shutil.copytree(ensure_keycloak(), home, symlinks=True)  # a first fetch may take minutes: not timed
        args = ["start-dev", *BUILD_OPTIONS, "--http-host=127.0.0.1"]
        if self.clients:
            (home / "data" / "import").mkdir(parents=True, exist_ok=True)
            (home / "data" / "import" / "realm.json").write_text(json.dumps(realm(self.clients)))
            args.append("--import-realm")
        self.port, management = free_ports(2)
        args += [f"--http-port={self.port}", f"--http-management-port={management}"]
        env = {
            **os.environ,
            "JAVA_HOME": str(Path(shutil.which(java) or java).resolve().parent.parent),
            # Replaces kc.sh's defaults, whose G1 flag conflicts with the tests' JDK_JAVA_OPTIONS (serial GC).
            "JAVA_OPTS": "-Xms64m -Xmx512m -XX:MaxMetaspaceSize=256m -XX:+ExitOnOutOfMemoryError -Dfile.encoding=UTF-8",
        }
        self._start_process([str(home / "bin" / "kc.sh"), *args], home, timeout, env=env)

    def _wait_ready(self, deadline: float) -> None:
        # The realm's discovery document answers once the import is done (it runs before Keycloak listens).
        probe = f"{self.issuer if self.clients else self.base_url + '/realms/master'}/.well-known/openid-configuration"
        while self.is_running() and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(probe, timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        why = "did not answer in time" if self.is_running() else "exited"
        raise RuntimeError(f"Keycloak {why}; log {self.log_path}:\n{log_excerpt(self.log_path)}")

    def stop(self) -> None:
        """Stops it; its copy of the distribution (~190 MB, the realm's secrets in its import file) goes, its log
        stays."""
        super().stop()
        if self._home is None:
            shutil.rmtree(self.workdir / "keycloak", ignore_errors=True)

    def client_credentials_token(self, client_id: str, secret: str) -> str:
        """An access token for `client_id` from the realm's token endpoint (the client-credentials grant)."""
        request = urllib.request.Request(
            self.token_url,
            data=urllib.parse.urlencode({"grant_type": "client_credentials"}).encode(),
            headers={"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return str(json.loads(r.read())["access_token"])
        except urllib.error.HTTPError as e:  # its body names the error, never the secret
            raise RuntimeError(
                f"Keycloak refused a token to client {client_id!r}: HTTP {e.code} {e.read()[:300]!r}"
            ) from None
