"""Compile the client hook library (``emitter/hook/java``) with ``javac`` against a RocketMQ
distribution's client jars, into ``.cache/routewatch-hook/<digest>/`` (ignored by git), and pack
it as ``routewatch-hook.jar`` there when the JDK's ``jar`` is present.

``python -m emitter.hook.build [ROCKETMQ_HOME]`` prints the jar's path (or the class directory's
without ``jar``); the distribution defaults to ``ROCKETMQ_HOME``. Nothing it builds is committed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

from routewatch.errors import RoutewatchError
from routewatch.java import compile_cached

__all__ = ["CACHE", "JAR", "MARKER", "RELEASE", "SOURCES", "build", "build_jar", "main"]

ROOT = Path(__file__).resolve().parent / "java"
SOURCES = tuple(sorted(ROOT.rglob("*.java")))
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "routewatch-hook"
MARKER = "io/routewatch/hook/RoutewatchProducer.class"
JAR = "routewatch-hook.jar"
RELEASE = 8  # what RocketMQ 4.9's client runs on


def build(home: Path) -> Path:
    """The directory of the compiled library for the distribution ``home``, built if needed."""
    return compile_cached(SOURCES, CACHE, MARKER, home, release=RELEASE)


def build_jar(home: Path) -> Path:
    """The library as a jar beside its classes (``routewatch-hook.jar``), packed if needed;
    the class directory itself when the JDK has no ``jar`` tool."""
    classes = build(home)
    jar = classes.parent / f"{classes.name}-{JAR}"
    if jar.is_file():
        return jar
    tool = shutil.which("jar")
    if tool is None:
        return classes
    tmp = jar.with_name(f".{jar.name}.{uuid.uuid4().hex}")
    try:
        subprocess.run(
            [tool, "--create", "--file", str(tmp), "-C", str(classes), "io"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        tmp.rename(jar)
    finally:
        tmp.unlink(missing_ok=True)
    return jar


def _home(argv: list[str]) -> Path:
    value = argv[0] if argv else os.environ.get("ROCKETMQ_HOME")
    if not value:
        raise RoutewatchError(
            "name a RocketMQ 4.9.x distribution: python -m emitter.hook.build <its folder>, or set "
            "ROCKETMQ_HOME."
        )
    home = Path(value).resolve()
    if not any((home / "lib").glob("rocketmq-client-*.jar")):
        raise RoutewatchError(
            f"{value} is not a RocketMQ distribution (no lib/rocketmq-client-*.jar): name a "
            "RocketMQ 4.9.x folder."
        )
    return home


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        print(build_jar(_home(args)))
    except (RoutewatchError, OSError, subprocess.SubprocessError) as exc:
        print(f"routewatch hook build: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
