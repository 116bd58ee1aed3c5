"""Build the client hook library (``emitter/hook/java``) into one jar with a stable name,
``emitter/hook/target/routewatch-hook.jar``, with Maven and the library's own ``pom.xml``
(``mvn -f emitter/hook/pom.xml package``, the local repository ``.cache/m2``; both ignored by
git). The jar is rebuilt when a source or the pom is newer than it; builds of the same sources
give the same bytes.

``python -m emitter.hook.build`` builds it if needed and prints its path.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from routewatch.errors import RoutewatchError

__all__ = ["JAR", "POM", "SOURCES", "build", "main"]

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
SOURCES = tuple(sorted((HERE / "java").rglob("*.java")))
JAR = HERE / "target" / "routewatch-hook.jar"
M2 = HERE.parents[1] / ".cache" / "m2"


def _fresh() -> bool:
    if not JAR.is_file():
        return False
    built = JAR.stat().st_mtime_ns
    return all(path.stat().st_mtime_ns <= built for path in (POM, *SOURCES))


def build() -> Path:
    """The library's jar, built with Maven first if it is missing or older than its sources
    (one build at a time: concurrent callers wait for it)."""
    if _fresh():
        return JAR
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RoutewatchError(
            "the client hook library is built with Maven, and `mvn` is not on the PATH: install "
            "Maven and a JDK (Debian: apt-get install maven openjdk-17-jdk-headless)."
        )
    JAR.parent.mkdir(parents=True, exist_ok=True)
    with (JAR.parent / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _fresh():
            return JAR
        result = subprocess.run(
            [mvn, "--batch-mode", "--quiet", "-f", str(POM), f"-Dmaven.repo.local={M2}", "package"],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
            env={**os.environ, "MAVEN_OPTS": os.environ.get("MAVEN_OPTS", "-Xmx512m")},
        )
        if result.returncode != 0 or not JAR.is_file():
            errors = [ln for ln in result.stdout.splitlines() if ln.startswith("[ERROR]")]
            detail = "\n".join(errors[:8]) or (result.stdout + result.stderr)[-3000:]
            raise RoutewatchError(
                f"Maven could not build the client hook library ({POM}); its errors follow:\n"
                f"{detail}"
            )
    return JAR


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args:
        print(
            "routewatch hook build: it takes no argument (the RocketMQ client comes from Maven "
            "Central); run `python -m emitter.hook.build`.",
            file=sys.stderr,
        )
        return 2
    try:
        print(build())
    except (RoutewatchError, OSError, subprocess.SubprocessError) as exc:
        print(f"routewatch hook build: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
