"""Reading traces line by line, with each line's event time and Kafka key.

Each line is parsed once, by the core's one reader (:func:`routewatch.codec.parse`), in the
reading process; a rebased trace (``--rebase-time``) is shifted there too, on the object already
parsed, so the replaying process never parses a line.
"""

from __future__ import annotations

import gzip
import multiprocessing
import multiprocessing.connection
import signal
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import orjson

from emitter.sinks import kafka_key
from routewatch.codec import parse
from routewatch.errors import RoutewatchError
from routewatch.validation import BadInput

__all__ = ["BadLineError", "TraceLine", "read_traces"]


@dataclass(frozen=True, slots=True)
class TraceLine:
    """One valid event of a trace: its raw bytes, time, Kafka key and where it came from."""

    raw: bytes
    ts: int
    key: bytes
    path: Path
    line_no: int


class BadLineError(RoutewatchError):
    """A trace line that is not a contract event."""


def _open(path: Path) -> IO[bytes]:
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise RoutewatchError(f"cannot read the trace {path}: {exc.strerror}.") from None
    if path.name.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
    return raw


def read_traces(
    paths: list[Path], skip_invalid: bool, bad: list[str], rebase_to: int | None = None
) -> Iterator[TraceLine]:
    """Every event of ``paths`` in order; a bad line stops with one sentence naming the file and
    line, or with ``skip_invalid`` is recorded in ``bad`` and skipped. With ``rebase_to`` (epoch
    ms), every ``ts`` is shifted so that the first event's is ``rebase_to``."""
    shift: int | None = None
    for path in paths:
        _open(path).close()  # every file must be readable before the first event goes out
    for path in paths:
        with _open(path) as f:
            for line_no, line in _numbered(path, f):
                raw = line.rstrip(b"\r\n")
                if not raw.strip():
                    continue
                obj = parse(raw)
                if isinstance(obj, BadInput):
                    message = f"{path}, line {line_no}: {obj.detail}"
                    if not skip_invalid:
                        raise BadLineError(f"{message}; fix the trace or pass --skip-invalid")
                    bad.append(message)
                    continue
                if rebase_to is not None:
                    if shift is None:
                        shift = rebase_to - obj["ts"]
                    obj["ts"] += shift
                    raw = orjson.dumps(obj)
                yield TraceLine(raw, obj["ts"], kafka_key(obj), path, line_no)


def _numbered(path: Path, f: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """The lines of an open trace, numbered; a gzip file that does not decompress to its end
    stops with one sentence after its readable lines (no stack trace)."""
    line_no = 0
    try:
        for line_no, line in enumerate(f, start=1):
            yield line_no, line
    except (EOFError, OSError, zlib.error) as exc:
        raise RoutewatchError(
            f"the trace {path} is not a whole gzip file ({exc}) after line {line_no}: copy it "
            "again, or give it uncompressed."
        ) from None


_CHUNK = 2_000


def _reader_process(
    paths: list[Path],
    skip_invalid: bool,
    rebase_to: int | None,
    conn: multiprocessing.connection.Connection,
) -> None:
    """The reading process: chunks of ``(raw, ts, key, path index, line)``, then ``("end",
    bad lines)`` or ``("error", message)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the replaying process's to handle
    index = {path: i for i, path in enumerate(paths)}
    bad: list[str] = []
    chunk: list[tuple[bytes, int, bytes, int, int]] = []
    try:
        try:
            for line in read_traces(paths, skip_invalid, bad, rebase_to):
                chunk.append((line.raw, line.ts, line.key, index[line.path], line.line_no))
                if len(chunk) >= _CHUNK:
                    conn.send(("lines", chunk))
                    chunk = []
        except RoutewatchError as exc:
            conn.send(("lines", chunk))
            conn.send(("error", str(exc)))
            return
        conn.send(("lines", chunk))
        conn.send(("end", bad))
    except BrokenPipeError:
        pass  # the replay stopped reading (Ctrl-C, or a failed sink)
    finally:
        conn.close()


def read_traces_aside(
    paths: list[Path], skip_invalid: bool, bad: list[str], rebase_to: int | None = None
) -> Iterator[TraceLine]:
    """:func:`read_traces` in a separate process, so that reading and validating use the second
    core while this one writes (the Kafka producer is CPU-bound in Python)."""
    for path in paths:
        _open(path).close()
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(
        target=_reader_process, args=(paths, skip_invalid, rebase_to, sender), daemon=True
    )
    process.start()
    sender.close()
    try:
        while True:
            message = receiver.recv()
            if message[0] == "lines":
                for raw, ts, key, i, line_no in message[1]:
                    yield TraceLine(raw, ts, key, paths[i], line_no)
            elif message[0] == "end":
                bad.extend(message[1])
                return
            else:
                raise BadLineError(message[1])
    finally:
        receiver.close()
        process.join(timeout=5)
        if process.is_alive():
            process.terminate()
