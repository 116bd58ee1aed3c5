"""The spool directory as files, and the lines of each file, read in the read stage's Python.

Spark's file source lists the spool (``binaryFile``, whose content it is not asked for, so it
opens no file): it keeps the log of the files each batch took in the checkpoint
(``<checkpoint>/sources/0``), takes each file once, when it first sees it, and caps the files
per batch (``ROUTEWATCH_MAX_FILES_PER_TRIGGER``). Each file is then read whole by the read
stage's Python worker (:func:`read_lines`), which splits its lines as Spark's text source did
(``\n``, ``\r\n`` or ``\r``; a UTF-8 byte order mark at its start dropped) and hands them to
validation in the same pass: the lines never become rows of Spark's JVM, which held about a
fifth of the read stage's time (docs/performance-notes.md, 2026-12-05, last).

A compressed file (``.gz``, ``.bz2``, ``.deflate``: zlib, ``.zst``) is decompressed as it is
read; one that does not decompress to its end — truncated, or not compressed at all — gives
the lines before the damage and one line of bad input, ``corrupt_file``, with its path as the
raw text, and the job goes on. A file compressed as Hadoop writes ``.lz4`` and ``.snappy``
(its own block framing) is not read: it is quarantined whole, likewise.
"""

from __future__ import annotations

import bz2
import gzip
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import orjson
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = [
    "LINES_SCHEMA",
    "compression_damage",
    "read_lines",
    "remove_read_files",
    "spool_files",
    "trace_files",
    "unread_codec",
]


def _zstd(path: Path, mode: str) -> Any:
    return pa.input_stream(str(path), compression="zstd")


# the compressed formats read (Python's own, and zstd through Arrow), by the file's suffix
_OPENERS: dict[str, Callable[[Path, str], Any]] = {
    ".gz": gzip.open,
    ".bz2": bz2.open,
    ".zst": _zstd,
}
# Hadoop's codecs of their own block framing, which Spark's text source read and this does not
_NOT_READ = {".lz4": "lz4", ".snappy": "snappy"}
_READ_BYTES = 4 << 20  # read of a file at a time
_PIECE_BYTES = 64 << 10  # decompressed at a time, at most
_LINES_PER_BATCH = 10_000  # lines per Arrow batch handed to validation
_BOM = b"\xef\xbb\xbf"
# what reading a file raises when it is not read to its end: a decompressor's damage (zlib's,
# Python's gzip and bz2, Arrow's zstd), or the system's refusal
_READ_ERRORS = (EOFError, OSError, ValueError, zlib.error)

# A file's lines as the read stage takes them (``streaming.stages.read``): each line's bytes
# and its origin; ``damage``, set on one more row of a file that could not be read to its end,
# says why (that row's ``value`` is the file's path).
LINES_SCHEMA = pa.schema([("value", pa.binary()), ("origin", pa.string()), ("damage", pa.string())])


# Spark's ``binaryFile`` rows (a streaming source is given its schema; only the file's metadata
# is selected from them)
_BINARY_FILE_SCHEMA = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"


def spool_files(spark: SparkSession, directory: Path, max_files: int | None = None) -> DataFrame:
    """The spool ``directory`` (created if missing) as a stream of its files, ``(path, origin)``
    (:func:`file_rows`), at most ``max_files`` a batch."""
    directory.mkdir(parents=True, exist_ok=True)
    reader = spark.readStream.format("binaryFile").schema(_BINARY_FILE_SCHEMA)
    if max_files:
        reader = reader.option("maxFilesPerTrigger", max_files)
    return file_rows(reader.load(str(directory)))


def trace_files(spark: SparkSession, paths: list[Path]) -> DataFrame:
    """Files (or the files of directories) as a table of ``(path, origin)``, read as the job
    reads a spool."""
    return file_rows(spark.read.format("binaryFile").load([str(p.absolute()) for p in paths]))


def file_rows(files: DataFrame) -> DataFrame:
    """Spark's ``binaryFile`` rows -> ``(path, origin)``: the file's URI, and the origin of its
    lines, which sorts files by modification time, then path (and the lines of a file by their
    place in it: ``streaming.stages.read``). Only the file's metadata is selected: Spark does
    not open it."""
    meta = F.col("_metadata")
    origin = F.concat_ws(
        "|",
        F.lpad(F.unix_millis(meta["file_modification_time"]).cast("string"), 15, "0"),
        meta["file_path"],
        F.lpad(F.lit("0"), 15, "0"),  # (a file is one block: read whole)
    )
    return files.select(meta["file_path"].alias("path"), origin.alias("origin"))


def read_lines(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Batches of files ``(path, origin)`` -> batches of their lines, :data:`LINES_SCHEMA`: each
    file's lines in order, with the file's origin; a file removed since it was listed holds
    none."""
    for batch in batches:
        paths = batch.column("path").to_pylist()
        origins = batch.column("origin").to_pylist()
        for uri, origin in zip(paths, origins, strict=True):
            yield from _file_batches(_local(uri), origin)


def _local(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def _file_batches(path: Path, origin: str) -> Iterator[pa.RecordBatch]:
    values: list[bytes] = []
    damage: str | None = None
    try:
        for line in _lines(path):
            values.append(line)
            if len(values) == _LINES_PER_BATCH:
                yield _batch(values, origin)
                values = []
    except FileNotFoundError:
        pass  # (removed by the operator since Spark listed it: nothing of it is known)
    except _UnreadError as exc:
        damage = str(exc)
    except _READ_ERRORS as exc:
        damage = _damage(path, exc)
    if damage is not None:
        values.append(str(path).encode())
    if values:
        yield _batch(values, origin, damage)


def _damage(path: Path, exc: Exception) -> str:
    """Why the file ``path`` was not read to its end: a compressed file that does not decompress
    to its end, or any file the system would not read (its permissions, a disk error)."""
    if _compressed(path):
        what = f"is not a whole {path.suffix[1:]} file ({exc})"
    else:
        what = f"could not be read to its end ({getattr(exc, 'strerror', None) or exc})"
    return (
        f"{path} {what}: the lines before the damage were read, the rest of the file was "
        "skipped; replace the file under a new name to have it read again."
    )


def _compressed(path: Path) -> bool:
    return path.suffix in _OPENERS or path.suffix == ".deflate"


def _batch(values: list[bytes], origin: str, damage: str | None = None) -> pa.RecordBatch:
    """Lines of one file; with ``damage``, its last row stands for the damage."""
    damages = pa.nulls(len(values), pa.string())
    if damage is not None:
        damages = pa.array([None] * (len(values) - 1) + [damage], pa.string())
    return pa.RecordBatch.from_arrays(
        [pa.array(values, pa.binary()), pa.array([origin] * len(values), pa.string()), damages],
        schema=LINES_SCHEMA,
    )


class _UnreadError(Exception):
    """A file of a compression the job does not read (its message: the line's detail)."""


def _lines(path: Path) -> Iterator[bytes]:
    """The lines of the file ``path``, decompressed, without their ends; a line cut off by
    damage is not one of them."""
    rest = b""
    first = True
    for chunk in _chunks(path):
        if first and chunk:
            chunk, first = chunk.removeprefix(_BOM), False
        data = rest + chunk
        # (a line ends at \n, \r\n or \r: what follows the last \n may go on in the next chunk,
        # and a \r there may be the first half of a \r\n)
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if cut:
            yield from data[:cut].splitlines()
    if rest:
        yield from rest.splitlines()


def _chunks(path: Path) -> Iterator[bytes]:
    """The bytes of the file ``path``, decompressed as its suffix says, a few MB at a time."""
    codec = unread_codec(path)
    if codec is not None:
        raise _UnreadError(
            f"{path} is compressed with {codec} in Hadoop's framing, which the job does not "
            "read: nothing of it was read; publish it uncompressed, or as .gz, .bz2 or .zst, "
            "under a new name."
        )
    if path.suffix == ".deflate":
        yield from _inflated(path)
        return
    opener = _OPENERS.get(path.suffix)
    if opener is None:
        with path.open("rb") as f:
            while chunk := f.read(_READ_BYTES):
                yield chunk
        return
    # (a decompressor's data is given a piece at a time, as it comes: a read that meets
    # damage loses what it decompressed in the same call, so that stays small)
    with opener(path, "rb") as f:
        read = getattr(f, "read1", f.read)
        while chunk := read(_PIECE_BYTES):
            yield chunk


def unread_codec(path: Path) -> str | None:
    """The compression of ``path`` that routewatch does not read, by its suffix (Hadoop's
    ``.lz4`` and ``.snappy``), or None."""
    return _NOT_READ.get(path.suffix)


def _inflated(path: Path) -> Iterator[bytes]:
    """A zlib stream's bytes (Hadoop's ``.deflate``), in chunks; EOFError if it ends early."""
    inflate = zlib.decompressobj()
    with path.open("rb") as f:
        while chunk := f.read(_READ_BYTES):
            yield inflate.decompress(chunk)
            if inflate.eof:
                break
    yield inflate.flush()
    if not inflate.eof:
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")


def compression_damage(path: Path) -> str | None:
    """Why the compressed file ``path`` (``.gz``, ``.bz2``, ``.deflate``, ``.zst``) does not
    decompress to its end, or None when it does or is not one of those. ``FileNotFoundError``
    when it is gone."""
    if not _compressed(path):
        return None
    try:
        for _ in _chunks(path):
            pass
    except FileNotFoundError:
        raise
    except _READ_ERRORS as exc:
        return str(exc)
    return None


def remove_read_files(
    source_log: Path, before_batch: int, older_than_ms: int, archive: Path | None = None
) -> int:
    """Remove (or move into ``archive``) the spool files that the batches before
    ``before_batch`` took — committed, so never read again by this checkpoint — and whose
    modification time is before ``older_than_ms`` (epoch ms); how many. A file already gone
    is skipped."""
    removed = 0
    for path, modified in _committed_files(source_log, before_batch):
        if modified >= older_than_ms:
            continue
        try:
            if archive is None:
                path.unlink()
            else:
                archive.mkdir(parents=True, exist_ok=True)
                path.rename(archive / path.name)
        except FileNotFoundError:
            continue
        removed += 1
    return removed


def _committed_files(source_log: Path, before_batch: int) -> list[tuple[Path, int]]:
    """``(path, modification time)`` of every file the log lists for a batch before
    ``before_batch``: the newest compacted log before it (every batch up to its own), then the
    batches' own logs after that one."""
    logs = {}
    for log in source_log.glob("*"):
        name = log.name.removesuffix(".compact")
        if name.isdigit() and int(name) < before_batch:
            logs[int(name)] = log
    compacted = [b for b, log in logs.items() if log.name.endswith(".compact")]
    start = max(compacted, default=-1)
    out = []
    for batch in sorted(b for b in logs if b >= start):
        for line in logs[batch].read_bytes().splitlines()[1:]:
            if line:
                entry = orjson.loads(line)
                if entry.get("batchId", batch) < before_batch:
                    out.append((Path(unquote(urlparse(entry["path"]).path)), entry["timestamp"]))
    return out
