"""The spool's compressed files that Spark could not read to their end, found from the file
source's own log (``streaming/sources/spool.py``), on literal files: no Spark."""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import orjson

from streaming.sources.spool import corrupt_files, remove_read_files

LINES = b"".join(b'{"n": %d}\n' % i for i in range(1000))


def _log(source_log: Path, name: str, entries: list[tuple[Path, int]]) -> None:
    """The file source's log file ``name``: a version line, then one JSON entry per file."""
    source_log.mkdir(parents=True, exist_ok=True)
    body = [orjson.dumps({"path": p.as_uri(), "timestamp": 0, "batchId": b}) for p, b in entries]
    (source_log / name).write_bytes(b"\n".join([b"v1", *body]))


def test_a_truncated_or_false_compressed_file_of_the_batch_is_quarantined(tmp_path: Path) -> None:
    whole, truncated = tmp_path / "whole.jsonl.gz", tmp_path / "cut off.jsonl.gz"
    whole.write_bytes(gzip.compress(LINES))
    truncated.write_bytes(gzip.compress(LINES)[:300])
    false = tmp_path / "false.jsonl.bz2"
    false.write_bytes(b"not bzip2 at all")
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(b"\xff\xfe")  # its lines are the read stage's business, not this
    _log(tmp_path / "log", "3", [(p, 3) for p in (whole, truncated, false, plain)])

    bad = corrupt_files(tmp_path / "log", 3)

    assert [(b.reason, b.raw) for b in bad] == [
        ("corrupt_file", str(truncated)),
        ("corrupt_file", str(false)),
    ]
    assert bad[0].detail.startswith(f"{truncated} is not a whole gz file (")
    assert bad[0].detail.endswith(
        "): the lines before the damage were read, the rest of the file was skipped; replace "
        "the file under a new name to have it read again."
    )


def test_a_compacted_log_gives_the_files_of_that_batch_only(tmp_path: Path) -> None:
    earlier, this = tmp_path / "earlier.gz", tmp_path / "this.gz"
    earlier.write_bytes(b"garbage")
    this.write_bytes(bz2.compress(LINES)[:50])  # named .gz: read as gzip, and not gzip
    _log(tmp_path / "log", "9.compact", [(earlier, 8), (this, 9)])

    assert [b.raw for b in corrupt_files(tmp_path / "log", 9)] == [str(this)]
    assert corrupt_files(tmp_path / "log", 10) == []  # not logged (yet): nothing


def test_a_file_removed_since_is_not_reported(tmp_path: Path) -> None:
    _log(tmp_path / "log", "0", [(tmp_path / "gone.gz", 0)])
    assert corrupt_files(tmp_path / "log", 0) == []


def test_read_files_past_the_retention_are_removed_or_archived(tmp_path: Path) -> None:
    spool, log = tmp_path / "spool", tmp_path / "log"
    spool.mkdir()
    files = {name: spool / f"{name}.jsonl" for name in ("old", "new", "uncommitted", "gone")}
    for path in files.values():
        path.write_bytes(b"{}\n")

    def entries(names: list[str], batch: int, ts: int) -> list[bytes]:
        return [
            orjson.dumps({"path": files[n].as_uri(), "timestamp": ts, "batchId": batch})
            for n in names
        ]

    log.mkdir()
    # batches 0-9 compacted into 9.compact, then 10 and 11 (11: the batch being written)
    (log / "9.compact").write_bytes(b"\n".join([b"v1", *entries(["old", "gone"], 3, 1_000)]))
    (log / "10").write_bytes(b"\n".join([b"v1", *entries(["new"], 10, 9_000)]))
    (log / "11").write_bytes(b"\n".join([b"v1", *entries(["uncommitted"], 11, 1_000)]))
    files["gone"].unlink()  # removed by hand meanwhile

    assert remove_read_files(log, 11, older_than_ms=5_000, archive=tmp_path / "archive") == 1
    assert sorted(p.name for p in spool.iterdir()) == ["new.jsonl", "uncommitted.jsonl"]
    assert (tmp_path / "archive" / "old.jsonl").read_bytes() == b"{}\n"
    assert remove_read_files(log, 12, older_than_ms=10_000) == 2  # deleted, this time
    assert list(spool.iterdir()) == []
