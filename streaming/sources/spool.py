"""The spool directory as lines: Spark's text source over the folder the replayer (or any
program) publishes trace files into, each line (its bytes) with its origin.

A file Spark cannot read to its end — a truncated or damaged compressed file — does not stop
the job: the source skips what it cannot read of it (``ignoreCorruptFiles``), and
:func:`corrupt_files` finds such files among a batch's, from the source's own log in the
checkpoint, so that each is quarantined with its reason (``corrupt_file``) and path instead of
being dropped with a line in Spark's log only."""

from __future__ import annotations

import bz2
import gzip
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlparse

import orjson
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from routewatch.changes import BadLine
from streaming.settings import StreamingSettings

__all__ = ["compression_damage", "corrupt_files", "file_lines", "remove_read_files", "spool_lines"]

# the compressed formats whose files are checked to their end (Python reads these two; Spark
# also reads .deflate, .lz4, .snappy and .zst, which are not checked: docs/operations.md)
_OPENERS: dict[str, Callable[..., IO[Any]]] = {".gz": gzip.open, ".bz2": bz2.open}


def spool_lines(spark: SparkSession, settings: StreamingSettings) -> DataFrame:
    """The spool directory as a stream of ``(value, origin)`` lines (created if missing)."""
    settings.spool_dir.mkdir(parents=True, exist_ok=True)
    reader = spark.readStream.format("text").option("ignoreCorruptFiles", "true")
    if settings.max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", settings.max_files_per_trigger)
    return file_lines(reader.load(str(settings.spool_dir)))


def file_lines(text: DataFrame) -> DataFrame:
    """Lines of Spark's text source -> ``(value, origin)``: the line's bytes (decoded by the
    read stage: a line that is not UTF-8 is bad input), and its origin, which sorts files by
    modification time, then path, then block."""
    meta = F.col("_metadata")
    origin = F.concat_ws(
        "|",
        F.lpad(F.unix_millis(meta["file_modification_time"]).cast("string"), 15, "0"),
        meta["file_path"],
        F.lpad(meta["file_block_start"].cast("string"), 15, "0"),
    )
    return text.select(F.col("value").cast("binary").alias("value"), origin.alias("origin"))


def corrupt_files(source_log: Path, batch_id: int) -> list[BadLine]:
    """The compressed files of batch ``batch_id`` (as the file source's log in the checkpoint,
    ``<checkpoint>/sources/0``, lists them) that do not decompress to their end, each as a
    quarantine line: reason ``corrupt_file``, the path as its raw text."""
    bad = []
    for path in _batch_files(source_log, batch_id):
        try:
            damage = compression_damage(path)
        except FileNotFoundError:
            continue  # removed since (by the operator): nothing of it is known
        if damage is not None:
            bad.append(
                BadLine(
                    "corrupt_file",
                    f"{path} is not a whole {path.suffix[1:]} file ({damage}): the lines before "
                    "the damage were read, the rest of the file was skipped; replace the file "
                    "under a new name to have it read again.",
                    str(path),
                )
            )
    return bad


def compression_damage(path: Path) -> str | None:
    """Why the compressed file ``path`` (``.gz``, ``.bz2``) does not decompress to its end, or
    None when it does or is not one of those. ``FileNotFoundError`` when it is gone."""
    opener = _OPENERS.get(path.suffix)
    if opener is None:
        return None
    try:
        with opener(path, "rb") as f:
            while f.read(1 << 20):
                pass
    except FileNotFoundError:
        raise
    except (EOFError, OSError, zlib.error) as exc:
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


def _batch_files(source_log: Path, batch_id: int) -> list[Path]:
    """The files the file source took in batch ``batch_id``: its log holds them in a file named
    after the batch, or, every 10 batches, in a compacted one holding every batch so far."""
    for name in (str(batch_id), f"{batch_id}.compact"):
        log = source_log / name
        if log.exists():
            entries = [orjson.loads(line) for line in log.read_bytes().splitlines()[1:] if line]
            return [
                Path(unquote(urlparse(e["path"]).path))
                for e in entries
                if e.get("batchId") == batch_id
            ]
    return []
