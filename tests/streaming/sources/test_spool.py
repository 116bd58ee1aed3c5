"""The spool's files read as lines in Python (``streaming/sources/spool.py``): line ends, the
compressions read, damaged and unread files, and the retention's removal from the file source's
log; on literal files, no Spark."""

from __future__ import annotations

import bz2
import gzip
import zlib
from pathlib import Path

import orjson
import pyarrow as pa
import pytest

from streaming.sources import spool
from streaming.sources.spool import compression_damage, read_lines, remove_read_files

LINES = b"".join(b'{"n": %d}\n' % i for i in range(1000))


def _read(*paths: Path) -> list[tuple[bytes, str, str | None]]:
    """The rows :func:`read_lines` gives for ``paths``, each file's origin its name."""
    files = pa.RecordBatch.from_pydict(
        {"path": [p.as_uri() for p in paths], "origin": [p.name for p in paths]}
    )
    out: list[tuple[bytes, str, str | None]] = []
    for batch in read_lines(iter([files])):
        assert batch.schema == spool.LINES_SCHEMA
        out += zip(*batch.to_pydict().values(), strict=True)
    return out


def test_lines_end_at_newline_carriage_return_or_both(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\xef\xbb\xbfa\r\nb\rc\n\nd")  # a byte order mark, then every kind of end

    assert _read(path) == [(v, "mixed.jsonl", None) for v in (b"a", b"b", b"c", b"", b"d")]


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_a_line_across_reads_is_one_line(
    tmp_path: Path, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spool, "_READ_BYTES", size)  # (every \r\n and line split across reads)
    path = tmp_path / "small.jsonl"
    path.write_bytes(b"one\r\ntwo\r\n\r\nthree\rfour\n")

    assert [v for v, _, _ in _read(path)] == [b"one", b"two", b"", b"three", b"four"]


def test_an_empty_file_holds_no_line_and_a_removed_one_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "kept.jsonl").write_bytes(b"x\n")

    rows = _read(tmp_path / "empty.jsonl", tmp_path / "gone.jsonl", tmp_path / "kept.jsonl")

    assert rows == [(b"x", "kept.jsonl", None)]


def test_many_lines_come_in_batches_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spool, "_LINES_PER_BATCH", 300)
    path = tmp_path / "many.jsonl"
    path.write_bytes(LINES)

    assert b"\n".join(v for v, _, _ in _read(path)) + b"\n" == LINES


@pytest.mark.parametrize(
    ("suffix", "compress"),
    [
        (".gz", gzip.compress),
        (".bz2", bz2.compress),
        (".deflate", zlib.compress),
        (".zst", lambda data: pa.compress(data, "zstd", asbytes=True)),
    ],
)
def test_each_compression_is_read_and_a_truncated_file_gives_its_lines_and_its_damage(
    tmp_path: Path, suffix: str, compress: object
) -> None:
    assert callable(compress)
    whole, cut = tmp_path / f"whole.jsonl{suffix}", tmp_path / f"cut.jsonl{suffix}"
    whole.write_bytes(compress(LINES))
    # two compressed parts (one zlib stream), the second cut off
    lines = LINES.splitlines()
    first, second = (
        b"".join(line + b"\n" for line in lines[:100]),
        LINES[len(b"".join(lines[:100])) + 100 :],
    )
    if suffix == ".deflate":
        cut.write_bytes(compress(LINES)[:-40])
    else:
        cut.write_bytes(compress(first) + compress(second)[:-40])

    assert [v for v, _, _ in _read(whole)] == lines
    assert compression_damage(whole) is None
    *read, (raw, origin, damage) = _read(cut)
    assert all(d is None for _, _, d in read) and origin == cut.name
    assert raw == str(cut).encode() and damage is not None
    assert damage.startswith(f"{cut} is not a whole {suffix[1:]} file (")
    assert damage.endswith(
        "): the lines before the damage were read, the rest of the file was skipped; replace "
        "the file under a new name to have it read again."
    )
    assert compression_damage(cut) is not None
    # the lines before the damage (Python's decompressors give them as they come; Arrow's zstd
    # stream, which reads ahead, gives none of a file it finds damaged)
    assert [v for v, _, _ in read] == lines[: len(read)]
    if suffix in (".gz", ".bz2"):
        assert len(read) >= 100


def test_a_file_named_compressed_that_is_not_is_one_line_of_damage(tmp_path: Path) -> None:
    false = tmp_path / "false.jsonl.gz"
    false.write_bytes(b"not gzip at all\n")

    ((raw, _, damage),) = _read(false)

    assert raw == str(false).encode() and damage is not None and "not a whole gz file" in damage


def test_a_file_the_system_will_not_read_is_one_line_of_damage_saying_why(tmp_path: Path) -> None:
    unreadable = tmp_path / "not-a-file.jsonl"  # (a directory: root reads any file)
    unreadable.mkdir()

    ((raw, _, damage),) = _read(unreadable)

    assert raw == str(unreadable).encode()
    assert damage == (
        f"{unreadable} could not be read to its end (Is a directory): the lines before the "
        "damage were read, the rest of the file was skipped; replace the file under a new "
        "name to have it read again."
    )


def test_hadoop_lz4_and_snappy_are_not_read_but_quarantined_whole(tmp_path: Path) -> None:
    path = tmp_path / "part-0000.jsonl.lz4"
    path.write_bytes(b"\x00\x00\x01\x00whatever")

    ((raw, _, damage),) = _read(path)

    assert raw == str(path).encode()
    assert damage == (
        f"{path} is compressed with lz4 in Hadoop's framing, which the job does not read: "
        "nothing of it was read; publish it uncompressed, or as .gz, .bz2 or .zst, under a "
        "new name."
    )
    assert compression_damage(tmp_path / "plain.jsonl") is None  # (not compressed: not looked at)


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
