"""A real single-node Apache Kafka (KRaft) for tests and demos, from Maven Central jars.

Used by the pytest fixtures (``KafkaBroker().start()`` / ``.stop()``; the fault tests also ``.kill()`` it
with SIGKILL and ``.restart()`` it on the same data, ports and cluster id) and by the CLI::

    python -m integration.kafka start|stop|status

``KafkaBroker(secured=True)`` is the same broker with security on: a SASL_SSL listener (a CA and a broker
certificate for 127.0.0.1 made with the openssl CLI at the first start, in the workdir: nothing committed),
a SASL_PLAINTEXT listener, mechanisms SCRAM-SHA-512, PLAIN and OAUTHBEARER, KRaft's StandardAuthorizer with one
super user for the harness (``admin_config()``); SCRAM users and ACLs are created through the admin API by the
tests. Its passwords are made at random per broker. OAUTHBEARER is checked by Kafka's own unsecured validator
(an unsigned JWT whose `sub` is the user: it proves a client's token path, not a sign-in service), and such a
session lasts no longer than its token: a client re-authenticates with a fresh one before it expires.

Test/dev tooling only: the product never imports this package.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from integration.process import ServerProcess, pid_alive

if TYPE_CHECKING:
    from typing import Self

KAFKA_VERSION = "4.2.2"
_HERE = Path(__file__).resolve().parent
POM = _HERE / "pom.xml"
JAVA_PARTITIONS_SRC = _HERE / "java" / "JavaPartitions.java"
# Outside the tracked tree: the jars (~45 MB) are fetched once per machine.
CACHE_DIR = Path(os.environ.get("PYSPARK_UPSERT_KAFKA_CACHE") or Path.home() / ".cache" / "pyspark-upsert-kafka")
STATE_FILE = CACHE_DIR / "broker.json"
_SLF4J = "-Dorg.slf4j.simpleLogger."
# Wall-clock timestamps in broker.log, to line it up with test output.
_TIME_OPTS = [f"{_SLF4J}showDateTime=true", f"{_SLF4J}dateTimeFormat=HH:mm:ss.SSS"]


def run_command(cmd: list[str], what: str, stdin: str | None = None) -> str:
    """Run cmd and return its stdout; on failure raise with the tail of its output."""
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        out = (proc.stdout + proc.stderr)[-4000:]
        raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{out}")
    return proc.stdout


def ensure_kafka_jars() -> Path:
    """The folder holding the broker's jars, fetched with Maven only when absent."""
    return fetch_maven_jars(POM, CACHE_DIR / f"kafka-{KAFKA_VERSION}" / "libs", "mvn fetching the Kafka jars")


def fetch_maven_jars(pom: Path, target: Path, what: str) -> Path:
    """`target`, holding the runtime jars of `pom`'s dependencies, fetched with Maven only when absent."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Fetch beside the target, then rename: an interrupted fetch never looks complete.
    tmp = Path(tempfile.mkdtemp(prefix="libs.partial-", dir=target.parent))
    mvn = ["mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies", f"-DoutputDirectory={tmp}"]
    try:
        run_command([*mvn, "-DincludeScope=runtime"], what)
        try:
            tmp.rename(target)
        except OSError:
            if not target.is_dir():  # not a concurrent fetch that won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def fetch_maven_archive(
    artifact: str, target: Path, holds: str, what: str, prepare: Callable[[Path], None] | None = None, done: str = ""
) -> Path:
    """`target`: the unpacked `artifact` (Maven coordinates of a .zip or .tar.gz), the folder of the archive that
    holds `holds` (a relative path), fetched with Maven only when `target / (done or holds)` is absent. `prepare` runs
    on the unpacked folder before it is put in place (it writes `done`)."""
    if (target / (done or holds)).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Fetch, unpack and prepare beside the target, then rename: an interrupted fetch never looks complete.
    tmp = Path(tempfile.mkdtemp(prefix=f"{target.name}.partial-", dir=target.parent))
    try:
        run_command(["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={tmp}"], what)
        archive = next(p for p in tmp.iterdir() if p.name.endswith((".zip", ".tar.gz")))
        unpack = (
            ["unzip", "-q", str(archive), "-d", str(tmp)]
            if archive.suffix == ".zip"
            else ["tar", "xzf", str(archive), "-C", str(tmp)]
        )
        run_command(unpack, f"unpacking {archive.name}")
        archive.unlink()
        unpacked = next(tmp.rglob(holds)).parents[len(Path(holds).parts) - 1]
        if prepare is not None:
            prepare(unpacked)
        try:
            unpacked.rename(target)
        except OSError:
            if not (target / (done or holds)).exists():  # not a concurrent fetch that won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the broker binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _random_cluster_id() -> str:
    # Kafka's form: unpadded url-safe base64 of a UUID; a leading '-' reads as a flag.
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def log_excerpt(path: Path, lines: int = 40, start: int = 0) -> str:
    """First errors/exceptions (the cause; shutdown noise follows) plus the log's tail, from byte `start`."""
    try:
        with path.open(errors="replace") as f:
            f.seek(start)
            tail = deque(f, maxlen=lines)
            f.seek(start)
            errors = [line for line in f if " ERROR " in line or "Exception: " in line][:8]
    except OSError:
        return "(no log)"
    return "".join(["first errors:\n", *errors, f"last {lines} lines:\n", *tail])


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (client sockets take ports from there)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_ports(count: int) -> list[int]:
    """Free ports for a broker, below the ephemeral range: a broker is restarted on its ports, and while it is
    down a port in that range can be taken by any client socket (a fault test's restart then fails)."""
    low = min(ephemeral_start(), 32768)
    rng = random.Random()
    ports: list[int] = []
    for _ in range(1000):  # bounded: a port already bound is tried again with another
        port = rng.randrange(10_000, low)
        if port in ports:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
        if len(ports) == count:
            return ports
    raise RuntimeError(f"no {count} free ports between 10000 and {low} on 127.0.0.1")


# The harness's super user and the PLAIN users: PLAIN users live in the broker's JAAS configuration (SCRAM
# users, in the cluster metadata, are created at run time through the admin API).
ADMIN_USER = "admin"
PLAIN_USERS = ("plain-alice",)


@dataclass(frozen=True)
class BrokerSecurity:
    """What a client of the secured broker needs: the CA file that signed the broker's certificate (for
    ``ssl.ca.location``) and the passwords made for this broker (never shown in a repr)."""

    ca_file: str
    admin_password: str = field(repr=False)
    plain_passwords: dict[str, str] = field(repr=False)

    def jaas_plain(self) -> str:
        users = {ADMIN_USER: self.admin_password, **self.plain_passwords}
        entries = " ".join(f'user_{name}="{pw}"' for name, pw in users.items())
        return (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{ADMIN_USER}" password="{self.admin_password}" {entries};'
        )


def _make_tls(folder: Path) -> str:
    """A CA and the broker's key and certificate (SAN IP:127.0.0.1 only: a client that connects by another
    name fails hostname verification) in `folder`; returns the CA file."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, broker = folder / "ca.pem", folder / "broker.pem"
    if ca.is_file() and broker.is_file():
        return str(ca)

    def openssl(*args: str) -> None:
        run_command(["openssl", *args], "openssl")

    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *key, "-keyout", str(folder / "ca.key"), "-out", str(ca), "-days", "7",
            "-subj", "/CN=upsert-kafka test CA")  # fmt: skip
    openssl("req", *key, "-keyout", str(folder / "broker.key"), "-out", str(folder / "broker.csr"),
            "-subj", "/CN=127.0.0.1")  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", str(folder / "broker.csr"), "-CA", str(ca), "-CAkey", str(folder / "ca.key"),
            "-CAcreateserial", "-out", str(folder / "broker.crt"), "-days", "7",
            "-extfile", str(folder / "san.ext"))  # fmt: skip
    # Kafka's PEM keystore: the private key (PKCS#8) and the certificate chain in one file.
    chain = (folder / "broker.key").read_text() + (folder / "broker.crt").read_text() + ca.read_text()
    broker.write_text(chain)
    return str(ca)


class KafkaBroker(ServerProcess):
    """One combined broker+controller KRaft node on 127.0.0.1 with free ports.

    The workdir (data, server.properties, broker.log) is kept after stop() so a failing
    test can point at the log. secured=True: SASL_SSL on `port`, SASL_PLAINTEXT on `sasl_plaintext_port`
    (see the module's docstring).
    """

    log_name = "broker.log"
    command_mark = b"kafka.Kafka"

    def __init__(self, workdir: Path | None = None, *, secured: bool = False) -> None:
        super().__init__(Path(workdir or tempfile.mkdtemp(prefix="upsert-kafka-")))
        self.port = 0
        self.controller_port = 0
        self.sasl_plaintext_port = 0  # secured only
        self.secured = secured
        self.security: BrokerSecurity | None = None
        self._log_start = 0  # where the current run's lines begin in broker.log

    @property
    def bootstrap_servers(self) -> str:
        """The client listener: PLAINTEXT, or SASL_SSL when secured."""
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_plaintext_servers(self) -> str:
        return f"127.0.0.1:{self.sasl_plaintext_port}"

    def admin_config(self) -> dict[str, str]:
        """librdkafka settings of the harness's own clients (the super user, when secured)."""
        if self.security is None:
            return {"bootstrap.servers": self.bootstrap_servers}
        return {
            "bootstrap.servers": self.sasl_plaintext_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": ADMIN_USER,
            "sasl.password": self.security.admin_password,
        }

    def _listener_config(self, host: str) -> dict[str, str]:
        cport = self.controller_port
        if self.security is None:
            return {
                "listeners": f"PLAINTEXT://{host}:{self.port},CONTROLLER://{host}:{cport}",
                "advertised.listeners": f"PLAINTEXT://{host}:{self.port}",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            }
        ssl, plain = f"SASL_SSL://{host}:{self.port}", f"SASL_PLAINTEXT://{host}:{self.sasl_plaintext_port}"
        jaas_plain = self.security.jaas_plain()
        jaas_scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        # No server callback: OAUTHBEARER's default, Kafka's unsecured JWT validator (alg "none", claims sub/exp).
        jaas_oauth = (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'unsecuredLoginStringClaim_sub="broker";'
        )
        # A session ends at its token's expiry (or sooner): a client must re-authenticate with a refreshed token.
        oauth = {
            f"listener.name.{name}.oauthbearer.{key}": value
            for name in ("sasl_ssl", "sasl_plaintext")
            for key, value in (("sasl.jaas.config", jaas_oauth), ("connections.max.reauth.ms", "60000"))
        }
        tls = Path(self.security.ca_file).parent
        return {
            "listeners": f"{ssl},{plain},CONTROLLER://{host}:{cport}",
            "advertised.listeners": f"{ssl},{plain}",
            # The controller listener authenticates too (PLAIN, as the super user): no anonymous super user.
            "listener.security.protocol.map": "SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "CONTROLLER:SASL_PLAINTEXT",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": jaas_plain,
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512,OAUTHBEARER",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas_plain,
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": jaas_scram,
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN,OAUTHBEARER",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas_plain,
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas_scram,
            "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
            "listener.name.sasl_ssl.ssl.keystore.location": str(tls / "broker.pem"),
            **oauth,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": f"User:{ADMIN_USER}",
            "allow.everyone.if.no.acl.found": "false",
        }

    def _write_config(self) -> Path:
        host, cport = "127.0.0.1", self.controller_port
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{host}:{cport}",
            **self._listener_config(host),
            "controller.listener.names": "CONTROLLER",
            "log.dirs": str(self.workdir / "data"),
            # A single node can only hold one replica of the internal topics.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # One internal partition each: the first group/transaction is ready at once.
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.partitions": "1",
            "auto.create.topics.enable": "true",
            # Sized for 2 cores and -Xmx512m (the cleaner's default buffer is 128 MB).
            "num.network.threads": "2",
            "num.io.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
            # The cleaner looks for work every half second instead of 15 s: a test that waits for compaction (lost
            # deletes) takes seconds; only compacted topics are looked at, so the others pay nothing.
            "log.cleaner.backoff.ms": "500",
        }
        path = self.workdir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def start(self, timeout: float = 90, *, detach: bool = False) -> None:
        """Format fresh storage, launch the broker, wait until it answers metadata.

        detach=True puts the JVM in its own session so it outlives the caller (the CLI).
        """
        if self.is_running():
            raise RuntimeError(f"broker already running (pid {self.pid})")
        # The first fetch may take minutes: not counted in `timeout`.
        cp = f"{ensure_kafka_jars()}/*"
        self.workdir.mkdir(parents=True, exist_ok=True)
        for attempt in range(3):
            try:
                return self._launch(cp, time.monotonic() + timeout, detach)
            except RuntimeError as e:  # another process took a free port meanwhile
                if attempt == 2 or "Address already in use" not in str(e):
                    raise

    def _launch(self, cp: str, deadline: float, detach: bool) -> None:
        shutil.rmtree(self.workdir / "data", ignore_errors=True)
        self.port, self.controller_port, self.sasl_plaintext_port = free_ports(3)
        if not self.secured:
            self.sasl_plaintext_port = 0
        elif self.security is None:
            self.security = BrokerSecurity(
                ca_file=_make_tls(self.workdir / "tls"),
                admin_password=secrets.token_urlsafe(16),
                plain_passwords={name: secrets.token_urlsafe(16) for name in PLAIN_USERS},
            )
        config = self._write_config()
        fmt = ["kafka.tools.StorageTool", "format", "-t", _random_cluster_id(), "-c", str(config)]
        run_command(["java", "-cp", cp, *fmt], "Kafka storage format")
        self.log_path.unlink(missing_ok=True)
        self._spawn(cp, config, deadline, detach)

    def _spawn(self, cp: str, config: Path, deadline: float, detach: bool) -> None:
        """Launch the JVM on `config` (the log is appended to: a restart keeps the earlier runs' lines)."""
        with self.log_path.open("ab") as log:
            self._log_start = log.tell()
            cmd = ["java", "-Xmx512m", "-Djava.awt.headless=true", *_TIME_OPTS, "-cp", cp, "kafka.Kafka"]
            self._proc = subprocess.Popen(
                [*cmd, str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.workdir,
                start_new_session=detach,
            )
        self._pid = None
        try:
            self._wait_ready(deadline)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, deadline: float) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        admin = None
        while self.is_running() and time.monotonic() < deadline:
            try:
                if admin is None:  # probe the port first: no librdkafka "refused" noise
                    port = self.sasl_plaintext_port or self.port  # the listener the harness uses
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    admin = AdminClient(self.admin_config())
                if admin.list_topics(timeout=2).brokers:
                    return
            except (OSError, KafkaException):  # not listening / not registered yet
                time.sleep(0.2)
        why = "did not become ready in time" if self.is_running() else "exited"
        log = log_excerpt(self.log_path, start=self._log_start)
        raise RuntimeError(f"Kafka broker {why}; log {self.log_path}:\n{log}")

    def stop(self) -> None:
        """SIGTERM the broker by its pid, SIGKILL after 20 s. The workdir is kept."""
        pid = self.pid
        if pid is not None and self.is_running():
            os.kill(pid, signal.SIGTERM)
            if not self._wait_exit(pid, 20):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._wait_exit(pid, 10)
        self._proc = self._pid = None

    def kill(self) -> None:
        """SIGKILL the broker by its pid, as a crash would, and wait until it is gone. The data is kept:
        `restart()` brings the broker back on it."""
        pid = self.pid
        if pid is None or not self.is_running():
            raise RuntimeError("the broker is not running")
        os.kill(pid, signal.SIGKILL)
        if not self._wait_exit(pid, 30):
            raise RuntimeError(f"the broker (pid {pid}) did not exit 30 s after SIGKILL")
        self._proc = self._pid = None

    def restart(self, *, graceful: bool = True, timeout: float = 90) -> None:
        """Bring the broker back on the same data directory, ports and cluster id, and wait until it answers.

        A running broker is stopped first: graceful=True with SIGTERM (a controlled shutdown), else with
        SIGKILL (a crash). A broker already down (after `kill()` or `stop()`) is just started again."""
        if self.is_running():
            if graceful:
                self.stop()
            else:
                self.kill()
        config = self.workdir / "server.properties"
        if not self.port or not config.is_file():
            raise RuntimeError(f"no broker to restart in {self.workdir}: start() it first")
        cp, deadline = f"{ensure_kafka_jars()}/*", time.monotonic() + timeout
        while True:
            try:
                return self._spawn(cp, config, deadline, detach=False)
            except RuntimeError as e:
                # The killed JVM's listening sockets may linger a moment; the ports are ours to wait for.
                if "Address already in use" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _wait_exit(self, pid: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # poll() also reaps our own child; a CLI-started broker is reaped by init.
            if (self._proc.poll() is not None) if self._proc else not pid_alive(pid):
                return True
            time.sleep(0.05)
        return False

    def to_state(self) -> dict[str, object]:
        return {
            "pid": self.pid,
            "bootstrap_servers": self.bootstrap_servers,
            "workdir": str(self.workdir),
            "log": str(self.log_path),
        }

    @classmethod
    def from_state(cls, state: dict[str, object]) -> KafkaBroker:
        """Re-attach to a broker another process started (the CLI's state file)."""
        broker = cls(Path(str(state["workdir"])))
        broker.port = int(str(state["bootstrap_servers"]).rsplit(":", 1)[1])
        broker._pid = int(str(state["pid"]))
        return broker

    def __enter__(self) -> Self:
        if not self.is_running():
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def create_topic(
    bootstrap: str | Mapping[str, str], name: str, partitions: int = 1, config: Mapping[str, str] | None = None
) -> str:
    """Creates a topic (replication 1) and waits until its metadata shows every partition, as a topic reaches every
    listener shortly after creation. `bootstrap`: the servers, or a client configuration (a secured broker's)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap} if isinstance(bootstrap, str) else dict(bootstrap))
    admin.create_topics([NewTopic(name, partitions, 1, config=dict(config or {}))])[name].result(30)
    deadline = time.monotonic() + 30
    while len(getattr(admin.list_topics(timeout=10).topics.get(name), "partitions", None) or {}) < partitions:
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name} did not appear")
        time.sleep(0.1)
    return name


def java_partitions(bootstrap_servers: str, topic: str, keys: list[bytes]) -> list[int]:
    """Partitions the Java client's default partitioner picks for `keys`.

    Each key is really produced to `topic` (value = key) by a Java KafkaProducer.
    """
    quiet, cp = f"{_SLF4J}defaultLogLevel=warn", f"{ensure_kafka_jars()}/*"
    cmd = ["java", quiet, "-cp", cp, str(JAVA_PARTITIONS_SRC), bootstrap_servers, topic]
    parts = [int(p) for p in run_command(cmd, "JavaPartitions", stdin="".join(k.hex() + "\n" for k in keys)).split()]
    if len(parts) != len(keys):
        raise RuntimeError(f"JavaPartitions printed {len(parts)} partitions for {len(keys)} keys")
    return parts


def _load_state() -> KafkaBroker | None:
    try:
        return KafkaBroker.from_state(json.loads(STATE_FILE.read_text()))
    except (OSError, ValueError, KeyError, IndexError):
        return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in ("start", "stop", "status"):
        print("usage: python -m integration.kafka start|stop|status", file=sys.stderr)
        return 2
    cmd, broker = args[0], _load_state()
    if cmd == "start":
        if broker is not None and broker.is_running():
            print(f"already running: {broker.bootstrap_servers} (pid {broker.pid})")
        else:
            broker = KafkaBroker()
            broker.start(detach=True)
            STATE_FILE.parent.mkdir(parents=True, exist_ok=True)
            STATE_FILE.write_text(json.dumps(broker.to_state(), indent=2) + "\n")
            print(f"Kafka {KAFKA_VERSION} up at {broker.bootstrap_servers} (pid {broker.pid})")
            print(f"log: {broker.log_path}")
        print(f"export KAFKA_BOOTSTRAP_SERVERS={broker.bootstrap_servers}")
        return 0
    if cmd == "stop":
        if broker is not None:
            pid = broker.pid
            broker.stop()
            print(f"stopped pid {pid}; log kept in {broker.log_path}")
        else:
            print("no broker recorded")
        STATE_FILE.unlink(missing_ok=True)
        return 0
    if broker is not None and broker.is_running():
        print(f"up: {broker.bootstrap_servers} (pid {broker.pid}, log {broker.log_path})")
        return 0
    print("down")
    return 1


if __name__ == "__main__":
    sys.exit(main())
