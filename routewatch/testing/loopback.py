"""The loopback-bind library (``native/loopback_bind.c``): preloaded into the RocketMQ
NameServers and brokers the harness starts, it turns their binds to the wildcard address into
binds to 127.0.0.1 (4.9.x binds every listener so; 5.x has no setting for its broker's HA port
nor for the proxy's ports), and refuses their connections to any address but loopback (a 5.x
NameServer connects to its host's own address).

Compiled on first use with the system's C compiler into
``.cache/loopback-bind/<digest of the source>/`` (ignored by git).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import uuid
from pathlib import Path

__all__ = ["SOURCE", "LoopbackBindError", "loopback_bind_library"]

SOURCE = Path(__file__).resolve().parent / "native" / "loopback_bind.c"
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "loopback-bind"


class LoopbackBindError(RuntimeError):
    """The library cannot be built; the message says what to install."""


def loopback_bind_library() -> Path:
    """The built library (``libloopback_bind.so``), compiled if needed."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    library = CACHE / digest / "libloopback_bind.so"
    if library.is_file():
        return library
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise LoopbackBindError(
            "RocketMQ 5.x tests keep the broker's listeners on 127.0.0.1 with a small preloaded "
            "library, which needs a C compiler: install gcc (Debian: apt-get install gcc)."
        )
    library.parent.mkdir(parents=True, exist_ok=True)
    tmp = library.with_name(f".{library.name}.{uuid.uuid4().hex}")
    try:
        result = subprocess.run(
            [compiler, "-shared", "-fPIC", "-O2", "-Wall", "-o", str(tmp), str(SOURCE), "-ldl"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise LoopbackBindError(f"compiling {SOURCE.name} failed:\n{result.stderr}")
        tmp.rename(library)
    finally:
        tmp.unlink(missing_ok=True)
    return library
