"""Java sources compiled with the JDK's ``javac`` against a RocketMQ distribution's ``lib/*``, into
a cache directory named by a digest of the sources and the distribution's jars (a changed source
or distribution gets a new directory): the client hook library (``emitter/hook``) and the
real-RocketMQ harness's driver. No build tool: Maven Central is not needed, and nothing compiled
is committed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from routewatch.errors import RoutewatchError

__all__ = ["JavaBuildError", "compile_cached", "find_javac", "javac"]


class JavaBuildError(RoutewatchError):
    """No JDK compiler, or ``javac`` failed; the message says which."""


def find_javac() -> str | None:
    """The JDK's compiler: ``$JAVA_HOME/bin/javac``, else the one on the PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home) / "bin" / "javac", os.X_OK):
        return str(Path(java_home) / "bin" / "javac")
    return shutil.which("javac")


def javac(
    sources: Path | Sequence[Path],
    into: Path,
    home: Path,
    classpath: Iterable[Path] = (),
    release: int | None = None,
) -> None:
    """Compile ``sources`` against the distribution's jars (and ``classpath``) into the directory
    ``into``, as ``javac -cp '<rocketmq>/lib/*'``; for the Java ``release`` given (default: the
    JDK's own)."""
    compiler = find_javac()
    if compiler is None:
        raise JavaBuildError("compiling against RocketMQ needs a JDK's javac: install a JDK 17.")
    files = [sources] if isinstance(sources, Path) else list(sources)
    jars = os.pathsep.join([str(home / "lib" / "*"), *map(str, classpath)])
    target = [] if release is None else ["--release", str(release)]
    result = subprocess.run(
        [compiler, "-nowarn", *target, "-encoding", "UTF-8", "-cp", jars, "-d", str(into)]
        + [str(f) for f in files],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if result.returncode != 0:
        names = ", ".join(str(f) for f in files)
        raise JavaBuildError(f"javac could not compile {names}:\n{result.stdout}{result.stderr}")


def compile_cached(
    sources: Sequence[Path],
    cache: Path,
    marker: str,
    home: Path,
    classpath: Sequence[Path] = (),
    release: int | None = None,
) -> Path:
    """The directory of ``sources`` compiled for the distribution ``home`` (and ``classpath``)
    under ``cache``, compiled if needed; ``marker`` is a class file's path inside it whose
    presence means the directory is complete. Built under a hidden name and renamed into place,
    so concurrent builds never see half a directory."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    for entry in classpath:  # a jar by its bytes: a rebuilt one under the same name counts
        digest.update(entry.read_bytes() if entry.is_file() else str(entry).encode())
    digest.update(f"release={release}".encode())
    for jar in sorted((home / "lib").glob("*.jar")):
        digest.update(f"{jar.name}:{jar.stat().st_size}".encode())
    classes = cache / digest.hexdigest()[:16]
    if (classes / marker).is_file():
        return classes
    cache.mkdir(parents=True, exist_ok=True)
    building = cache / f".building-{uuid.uuid4().hex}"
    try:
        javac(sources, building, home, classpath, release)
        building.rename(classes)
    except OSError:  # another process got there first
        pass
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return classes
