"""The Hadoop file system Spark writes local checkpoints through: routewatch's own, which runs
no child processes, when it can be built; Hadoop's ``RawLocalFs`` otherwise.

Hadoop's local file system, without Hadoop's native library (pip's PySpark has none), runs
``chmod`` in a child process for every file it creates and ``readlink`` for every path it
renames; Spark's checkpoint manager creates and renames five to seven files per micro-batch, on
the batch's critical path. ``jvm/NoForkLocalFs.java`` does both through ``java.nio``. It is
compiled once, with the JDK's ``javac``, into a jar cached under ``~/.cache/routewatch`` (or
``$XDG_CACHE_HOME/routewatch``) and named by a hash of its source and of Hadoop's jar, so a new
routewatch or Spark builds it again. Without a JDK routewatch uses Hadoop's ``RawLocalFs`` (the
same files, a few child processes per file).

It can only be put on the class path of a JVM that routewatch starts itself, in local mode: not
under ``spark-submit`` (its JVM is running already) nor on a cluster (the executors write the
state store's files). See docs/operations.md, Checkpoints.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pyspark

__all__ = ["NO_FORK_FS_CLASS", "SOURCE", "cache_dir", "no_fork_jar"]

log = logging.getLogger("routewatch.stream")

SOURCE = Path(__file__).with_name("jvm") / "NoForkLocalFs.java"
NO_FORK_FS_CLASS = "routewatch.hadoop.NoForkLocalFs"
COMPILE_TIMEOUT_S = 120


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "routewatch"


def _hadoop_jars() -> list[Path]:
    jars = Path(pyspark.__file__).parent / "jars"
    return sorted(jars.glob("hadoop-client-api-*.jar")) + sorted(
        jars.glob("hadoop-client-runtime-*.jar")
    )


def no_fork_jar(cache: Path, javac: str | None) -> Path | None:
    """The jar of ``NoForkLocalFs``, built into ``cache`` if it is not there yet; None (and why,
    in the log) when it cannot be built."""
    hadoop = _hadoop_jars()
    if not hadoop:
        log.info("no Hadoop client jar in PySpark: local checkpoints use Hadoop's RawLocalFs")
        return None
    digest = hashlib.sha256(SOURCE.read_bytes())
    for jar in hadoop:
        digest.update(jar.name.encode())
    target = cache / f"routewatch-local-fs-{digest.hexdigest()[:16]}.jar"
    if target.exists():
        return target
    if javac is None:
        log.info(
            "no JDK compiler (javac) found: local checkpoints use Hadoop's RawLocalFs, which "
            "runs a few child processes per checkpoint file (install a JDK to avoid them)"
        )
        return None
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="routewatch-javac-") as tmp:
            classes = Path(tmp) / "classes"
            class_path = os.pathsep.join(map(str, hadoop))
            command = [javac, "--release", "17", "-nowarn", "-d", str(classes)]
            subprocess.run(
                [*command, "-cp", class_path, str(SOURCE)],
                check=True,
                capture_output=True,
                timeout=COMPILE_TIMEOUT_S,
            )
            partial = cache / f".{target.name}.{os.getpid()}.tmp"
            with zipfile.ZipFile(partial, "w") as archive:
                for path in sorted(classes.rglob("*.class")):
                    archive.write(path, path.relative_to(classes).as_posix())
            partial.replace(target)  # atomic: another process may build it at the same time
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        first = detail.decode(errors="replace").strip().splitlines()[:1] or [str(exc)]
        log.warning(
            "could not build routewatch's local file system (%s): local checkpoints use "
            "Hadoop's RawLocalFs",
            first[0],
        )
        return None
    log.info("built routewatch's local file system for checkpoints: %s", target)
    return target
