"""The real parts the tests run, from Maven Central into ``.cache/parts/``: RocketMQ 4.9.x and 5.x
as distributions (``lib/`` and ``conf/``), Apache Kafka 4.x (``lib/``), and Spark's own Kafka
connector (its jars, for ``spark.jars``).

The versions are in ``versions.properties`` beside this file, the artifacts of each part in the
resolve-only ``pom.xml`` beside it (one Maven profile per part). ``python -m
routewatch.testing.parts`` (run by ``.ci/install --test``) resolves every part not yet in the
cache; :func:`home` finds an installed one, or says in one sentence how to install it. Nothing
here is fetched at test time, and nothing fetched is committed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from routewatch.errors import RoutewatchError

__all__ = [
    "CACHE",
    "PARTS",
    "Part",
    "PartMissingError",
    "home",
    "install",
    "spark_kafka_jars",
    "versions",
]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CACHE = REPO / ".cache" / "parts"
M2 = REPO / ".cache" / "m2"
POM = HERE / "pom.xml"
VERSIONS = HERE / "versions.properties"
DONE = ".complete"


class PartMissingError(RoutewatchError):
    """A part is not in the cache (or Maven could not resolve it); the message says what to do."""


@cache
def versions() -> dict[str, str]:
    """``versions.properties`` as a mapping (``rocketmq4.version`` -> ``4.9.7``, ...)."""
    out: dict[str, str] = {}
    for raw in VERSIONS.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


# -- RocketMQ's logging ------------------------------------------------------------------------
# RocketMQ 4.9's NameServer, broker and mqadmin configure logback from
# $ROCKETMQ_HOME/conf/logback_<process>.xml and exit without it. Each process writes one file in
# its own user.home, with the time to the millisecond first (the liveness tests read the
# registrations and the NameServers' expiries from them).

_LOGBACK_4 = """<?xml version="1.0" encoding="UTF-8"?>
<!-- routewatch's test harness: every logger of this process into one file. -->
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${{user.home}}/logs/rocketmqlogs/{file}</file>
    <append>true</append>
    <encoder><pattern>%d{{yyyy-MM-dd HH:mm:ss.SSS}} %-5p [%t] %c - %m%n</pattern></encoder>
  </appender>
  <logger name="RocketmqStats" level="WARN"/>
  <logger name="RocketmqWaterMark" level="WARN"/>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""

# RocketMQ 5.x reads its (shaded) logback configuration from its jars unless
# -Drmq.logback.configurationFile names one; the harness gives each process its own but the
# proxy, which keeps its jar's (the files and line format an operator's proxy writes).
_LOGBACK_5 = _LOGBACK_4.replace("ch.qos.logback.", "org.apache.rocketmq.logging.ch.qos.logback.")

_LOG_FILES = {
    "namesrv": "namesrv.log",
    "broker": "broker.log",
    "tools": "tools.log",
}


def _rocketmq_conf(logback: str) -> Callable[[Path], None]:
    def lay_out(root: Path) -> None:
        conf = root / "conf"
        conf.mkdir(exist_ok=True)
        for process, file in _LOG_FILES.items():
            (conf / f"logback_{process}.xml").write_text(logback.format(file=file))

    return lay_out


# -- the parts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One part: its Maven profile, the version key naming its folder, and what is laid out
    around ``lib/`` (the jars Maven copied)."""

    name: str
    profile: str
    version_key: str
    lay_out: Callable[[Path], None] | None = None
    # only these artifacts (the connector: Spark ships the rest of its dependencies itself)
    include: tuple[str, ...] = ()

    @property
    def version(self) -> str:
        return versions()[self.version_key]

    @property
    def folder(self) -> Path:
        return CACHE / f"{self.name}-{self.version}"

    @property
    def stamp(self) -> str:
        """What a finished folder's ``.complete`` holds: the part, its version and a digest of
        what this module lays out around the jars, so that a changed layout is redone."""
        layout = f"{_LOGBACK_4}{_LOGBACK_5}{sorted(_LOG_FILES.items())}{self.include}"
        digest = hashlib.sha256(layout.encode()).hexdigest()[:12]
        return f"{self.name} {self.version} {digest}\n"

    def installed(self) -> bool:
        marker = self.folder / DONE
        return marker.is_file() and marker.read_text() == self.stamp


PARTS: Mapping[str, Part] = {
    p.name: p
    for p in (
        Part("rocketmq4", "rocketmq4", "rocketmq4.version", _rocketmq_conf(_LOGBACK_4)),
        Part("rocketmq5", "rocketmq5", "rocketmq5.version", _rocketmq_conf(_LOGBACK_5)),
        Part("grpc-client", "grpc-client", "grpc-client.version"),
        Part("kafka", "kafka", "kafka.version"),
        Part(
            "spark-kafka",
            "spark-kafka",
            "spark.version",
            include=(
                "spark-sql-kafka-0-10_2.13",
                "spark-token-provider-kafka-0-10_2.13",
                "kafka-clients",
                "commons-pool2",
            ),
        ),
    )
}

_INSTALL_HINT = "run `bash .ci/install --test` (it resolves the test parts from Maven Central)"


def home(name: str) -> Path:
    """The installed folder of the part ``name`` (its ``lib/`` holds the jars); raises
    :class:`PartMissingError` with one sentence saying how to install it."""
    part = PARTS[name]
    if not part.installed():
        raise PartMissingError(
            f"{name} {part.version} is not in {CACHE}: {_INSTALL_HINT}, "
            "or run `python -m routewatch.testing.parts`."
        )
    return part.folder


def spark_kafka_jars() -> str:
    """The jars of Spark's Kafka connector at the pinned PySpark's version, comma separated as
    ``spark.jars`` (and ``ROUTEWATCH_SPARK_JARS``) take them."""
    return ",".join(str(p) for p in sorted((home("spark-kafka") / "lib").glob("*.jar")))


def _mvn() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise PartMissingError(
            "the test parts are resolved with Maven, and `mvn` is not on the PATH: install Maven "
            "(Debian: apt-get install maven) and a JDK 17."
        )
    return mvn


def install(name: str, *, log: Callable[[str], None] = print) -> Path:
    """Resolve the part ``name`` with Maven into its folder under ``.cache/parts/`` (nothing is
    done when it is there already); the folder."""
    part = PARTS[name]
    if part.installed():
        return part.folder
    log(f"resolving {name} {part.version} from Maven Central into {part.folder}")
    staging = part.folder.with_name(f".{part.folder.name}.{uuid.uuid4().hex}")
    staging.mkdir(parents=True)
    try:
        argv = [
            _mvn(),
            "--batch-mode",
            "--quiet",
            "-f",
            str(POM),
            "-P",
            part.profile,
            f"-Dmaven.repo.local={M2}",
            *(f"-D{key}={value}" for key, value in versions().items()),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging / 'lib'}",
        ]
        if part.include:
            argv.append(f"-DincludeArtifactIds={','.join(part.include)}")
        result = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
            env={**os.environ, "MAVEN_OPTS": os.environ.get("MAVEN_OPTS", "-Xmx512m")},
        )
        if result.returncode != 0:
            errors = [ln for ln in result.stdout.splitlines() if ln.startswith("[ERROR]")]
            detail = "\n".join(errors[:5]) or result.stdout[-2000:] + result.stderr[-2000:]
            raise PartMissingError(
                f"Maven could not resolve {name} {part.version} (its errors follow); check that "
                f"Maven Central is reachable and the version in {VERSIONS.name} exists:\n{detail}"
            )
        if part.lay_out is not None:
            part.lay_out(staging)
        (staging / DONE).write_text(part.stamp)
        shutil.rmtree(part.folder, ignore_errors=True)
        staging.rename(part.folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return part.folder
