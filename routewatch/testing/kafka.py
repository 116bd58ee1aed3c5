"""A real Apache Kafka 4.x broker on free 127.0.0.1 ports, for tests: one process that is both
broker and controller (KRaft mode, no ZooKeeper).

The jars come from Maven Central (``kafka_2.13`` and its runtime dependencies, at the version of
``routewatch/testing/parts/versions.properties``), resolved by ``.ci/install --test`` into
``.cache/parts/kafka-<version>/lib``; ``ROUTEWATCH_TEST_KAFKA_HOME`` points at any other folder
whose ``lib/`` (or ``libs/``, as in Kafka's own distribution) holds Kafka 4.x's jars. The
storage is formatted with a random cluster id, then ``kafka.Kafka`` runs as a plain ``java``
child, stopped by its own PID. kafka-python finds the protocol versions by itself.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from routewatch.testing import parts
from routewatch.testing.processes import free_port, stop, wait_for

HOME_VARIABLE = "ROUTEWATCH_TEST_KAFKA_HOME"
HEAP = ("-Xms256m", "-Xmx512m")
# As Kafka's own kafka-run-class.sh starts the broker (its GC settings).
JVM_OPTS = (
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
)
_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <File name="FILE" fileName="{log}" append="true">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Logger name="org.apache.kafka.controller" level="INFO"/>
    <Root level="INFO"><AppenderRef ref="FILE"/></Root>
  </Loggers>
</Configuration>
"""


class KafkaNotFoundError(RuntimeError):
    """No Kafka jars were found; the message says how to install them."""


def kafka_lib() -> Path:
    """The folder of Kafka's jars; raises :class:`KafkaNotFoundError` with one sentence."""
    value = os.environ.get(HOME_VARIABLE)
    if value:
        home = Path(value).resolve()
        for lib in (home / "lib", home / "libs"):
            if any(lib.glob("kafka_2.13-*.jar")):
                return lib
        raise KafkaNotFoundError(
            f"{HOME_VARIABLE}={value} holds no Kafka jars (lib/ or libs/ with kafka_2.13-*.jar): "
            "point it at a Kafka 4.x folder, or unset it to use the one the install step fetches."
        )
    try:
        return parts.home("kafka") / "lib"
    except parts.PartMissingError as exc:
        raise KafkaNotFoundError(str(exc)) from None


def _kafka_ok(bootstrap: str) -> bool:
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=2000)
    except (KafkaError, OSError):
        return False
    try:
        admin.list_topics()
        return True
    except (KafkaError, OSError):
        return False
    finally:
        admin.close()


def random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe Base64 without padding, as
    ``kafka-storage.sh random-uuid`` prints one."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


@dataclass
class KafkaBroker:
    """One Kafka process (broker and controller), started by :meth:`start`, stopped by
    :meth:`stop`."""

    workdir: Path
    port: int = 0
    controller_port: int = 0
    lib: Path = field(default_factory=kafka_lib)
    cluster_id: str = field(default_factory=random_cluster_id)
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self._proc is not None, "Kafka is not running"
        return self._proc.pid

    @property
    def _config(self) -> Path:
        return self.workdir / "server.properties"

    @property
    def _log(self) -> Path:
        return self.workdir / "kafka.out"

    def _java(self, main_class: str, *args: str) -> list[str]:
        java = shutil.which("java") or "java"
        return [
            java,
            *HEAP,
            *JVM_OPTS,
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.xml'}",
            f"-Dkafka.logs.dir={self.workdir / 'logs'}",
            "-cp",
            str(self.lib / "*"),
            main_class,
            *args,
        ]

    def _write_config(self) -> None:
        self._config.write_text(
            "process.roles=broker,controller\n"
            "node.id=1\n"
            f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}\n"
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},"
            f"CONTROLLER://127.0.0.1:{self.controller_port}\n"
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}\n"
            "controller.listener.names=CONTROLLER\n"
            "inter.broker.listener.name=PLAINTEXT\n"
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
            f"log.dirs={self.workdir / 'kafka-logs'}\n"
            "num.partitions=1\n"
            "offsets.topic.replication.factor=1\n"
            "offsets.topic.num.partitions=4\n"
            "transaction.state.log.replication.factor=1\n"
            "transaction.state.log.min.isr=1\n"
            "share.coordinator.state.topic.replication.factor=1\n"
            "share.coordinator.state.topic.min.isr=1\n"
            "group.initial.rebalance.delay.ms=0\n"
            "auto.create.topics.enable=true\n"
            "delete.topic.enable=true\n"
        )
        (self.workdir / "log4j2.xml").write_text(_LOG4J2.format(log=self.workdir / "server.log"))

    def _format(self) -> None:
        result = subprocess.run(
            self._java(
                "kafka.tools.StorageTool",
                "format",
                # one argument with "=": a random id may begin with "-" (1 in 64), which the
                # tool's parser would read as an option
                f"--cluster-id={self.cluster_id}",
                "--config",
                str(self._config),
            ),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"formatting Kafka's storage failed:\n{result.stdout}{result.stderr}"
            )

    def _spawn(self) -> None:
        with self._log.open("ab") as out:
            self._proc = subprocess.Popen(
                self._java("kafka.Kafka", str(self._config)),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _wait_ready(self, timeout: float, what: str) -> None:
        def ready() -> bool:
            proc = self._proc
            assert proc is not None
            if proc.poll() is not None:
                tail = self._log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"Kafka exited with status {proc.returncode}:\n{tail}")
            return _kafka_ok(self.bootstrap)

        wait_for(ready, timeout, what, interval=0.25)

    def start(self, timeout: float = 120) -> None:
        """Format the storage (with ``cluster_id``) and start Kafka, waiting until it answers."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        self.controller_port = self.controller_port or free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        self._write_config()
        self._format()
        self._spawn()
        self._wait_ready(timeout, f"Kafka answering on {self.bootstrap}")

    def restart_kafka(self, timeout: float = 120) -> None:
        """Stop Kafka (SIGTERM: a controlled shutdown) and start it again on the same ports and
        logs."""
        proc, self._proc = self._proc, None
        assert proc is not None, "Kafka is not running"
        stop(proc, timeout)
        self._spawn()
        self._wait_ready(timeout, f"Kafka answering again on {self.bootstrap}")

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic with ``partitions`` partitions, waiting until every one has a leader."""
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.create_topics([NewTopic(name, partitions, 1)])
        finally:
            admin.close()
        wait_for(
            lambda: len(self.partitions(name)) == partitions,
            60,
            f"topic {name} having {partitions} partitions with leaders",
        )

    def partitions(self, topic: str) -> set[int]:
        """The partitions of ``topic`` that the broker reports, as a fresh client sees them."""
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap)
        try:
            return set(consumer.partitions_for_topic(topic) or ())
        finally:
            consumer.close()

    def stop(self, timeout: float = 30) -> None:
        """Stop Kafka by the PID this object started; SIGKILL if it lingers."""
        proc, self._proc = self._proc, None
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
