"""Recording: events written as a trace, one JSON object per line, gzip when the name ends .gz.

A trace is written to a temporary name beside the target and renamed into place when complete,
so a reader never sees half a trace.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from types import TracebackType
from typing import IO

from routewatch.codec import encode
from routewatch.errors import RoutewatchError
from routewatch.events import Event

__all__ = ["TraceWriter"]


class TraceWriter:
    """Appends encoded events (or pre-encoded lines) to a trace file; a context manager."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        self._tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            raw = self._tmp.open("wb")
        except OSError as exc:
            raise RoutewatchError(f"cannot write the trace {path}: {exc.strerror}.") from None
        self._file: IO[bytes] = (
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3, mtime=0)  # type: ignore[assignment]
            if path.name.endswith(".gz")
            else raw
        )
        self._raw = raw

    def write(self, event: Event) -> None:
        self._file.write(encode(event) + b"\n")
        self.count += 1

    def write_line(self, line: bytes) -> None:
        """One already-encoded event, without its newline."""
        self._file.write(line + b"\n")
        self.count += 1

    def close(self, *, keep: bool = True) -> None:
        if self._file is not self._raw:
            self._file.close()
        self._raw.close()
        if keep:
            os.replace(self._tmp, self.path)
        else:
            self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(keep=kind is None)
