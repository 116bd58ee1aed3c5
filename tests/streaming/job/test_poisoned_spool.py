"""``routewatch stream`` over a poisoned spool, as an operator runs it: random bytes among valid
lines, a file of random bytes, a truncated gzip, a file that is not gzip though named so, an
empty file, and lines appended to a file after it was read. The job goes on; what is bad is
quarantined with its reason and its file; a restart goes on too."""

from __future__ import annotations

import dataclasses
import gzip
import os
import random
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from emitter.scenarios import SCENARIOS
from emitter.sinks import ORIGIN_FILE
from routewatch.codec import encode
from routewatch.events import Event
from routewatch.store import open_store
from routewatch.testing.processes import start_routewatch, wait_for

pytestmark = pytest.mark.spark

NOISE = random.Random(7).randbytes(2000)


def _lines(events: list[Event]) -> bytes:
    return b"".join(encode(e) + b"\n" for e in events)


def _moved(events: list[Event], cluster: str, by_ms: int) -> list[Event]:
    """``events`` in another cluster, ``by_ms`` later (after the first file's, so not late)."""
    return [dataclasses.replace(e, cluster=cluster, ts=e.ts + by_ms) for e in events]


def _publish(spool: Path, name: str, data: bytes) -> Path:
    """A file published as the spool wants it: written under a hidden name, then renamed."""
    hidden = spool / f".{name}"
    hidden.write_bytes(data)
    return hidden.rename(spool / name)


def _stream(tmp_path: Path, env: dict[str, str], n: int) -> subprocess.Popen[bytes]:
    log = tmp_path / f"stream{n}.log"  # (the job's log lines there too)
    return start_routewatch(["stream", "--source", "spool", "--log", str(log)], env, log)


def test_a_poisoned_spool_is_quarantined_and_the_job_goes_on(tmp_path: Path) -> None:
    data, spool = tmp_path / "data", tmp_path / "data" / "spool"
    spool.mkdir(parents=True)
    # what replay and collect leave in a spool (emitter/sinks/local.py): never read as events
    (spool / ORIGIN_FILE).write_text("replayed\n")
    env = {**os.environ, "ROUTEWATCH_DATA_DIR": str(data), "ROUTEWATCH_TRIGGER_INTERVAL_S": "1"}
    dies = SCENARIOS["broker-dies"].run(seed=1)
    valid = _lines(dies).splitlines(keepends=True)
    mixed = b"".join([*valid[:20], NOISE.replace(b"\n", b"") + b"\n", *valid[20:]])
    a = _publish(spool, "a-mixed.jsonl", mixed)
    _publish(spool, "b-noise.jsonl", NOISE)
    # two gzip members, the second cut off: the first's lines are read, the rest skipped
    skew = _lines(_moved(SCENARIOS["queue-skew"].run(seed=1), "Truncated", 400_000))
    lines = skew.splitlines(keepends=True)
    second = gzip.compress(b"".join(lines[7:]))
    cut = gzip.compress(b"".join(lines[:7])) + second[: len(second) // 2]
    truncated = _publish(spool, "c-truncated.jsonl.gz", cut)
    false = _publish(spool, "d-false.jsonl.gz", NOISE)
    _publish(spool, "e-empty.jsonl", b"")
    store_url = f"sqlite:///{data / 'routewatch.db'}"

    def rows(sql: str) -> list[Any]:
        if not (data / "routewatch.db").exists():
            return []
        store = open_store(store_url)
        try:
            return list(store.db.execute(sql).fetchall())
        finally:
            store.close()

    def clusters() -> set[str]:
        return {r[0] for r in rows("SELECT cluster FROM clusters")}

    proc = _stream(tmp_path, env, 1)
    try:

        def read_all() -> bool:
            assert proc.poll() is None, (tmp_path / "stream1.log").read_text()[-3000:]
            reasons = {r[0] for r in rows("SELECT reason FROM quarantine")}
            return {"not_utf8", "corrupt_file"} <= reasons and "Truncated" in clusters()

        wait_for(read_all, 300, "the spool's files read", interval=0.5)
        # lines appended to a file already read are never read; a new file is
        appended = _moved(SCENARIOS["queue-skew"].run(seed=2), "Appended", 800_000)
        with a.open("ab") as f:
            f.write(_lines(appended))
        later = _moved(SCENARIOS["queue-skew"].run(seed=3), "Later", 800_000)
        _publish(spool, "f-later.jsonl", _lines(later))
        wait_for(lambda: "Later" in clusters(), 120, "the later file read", interval=0.5)
        quarantined = rows("SELECT reason, detail, raw FROM quarantine ORDER BY seq")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()

    assert "Appended" not in clusters()
    # the valid lines' alerts, whatever stood between them
    store = open_store(store_url)
    alerts = [a for a in store.alerts() if a["cluster"] == "DefaultCluster"]
    store.close()
    # (as they opened within the trace: the later files' events move the stream's one clock on,
    # past the end of this one, where its brokers expire too)
    end = max(e.ts for e in dies)
    opened = {(a["kind"], a["topic"] or a["broker"]) for a in alerts if a["opened_at"] <= end}
    assert opened == {(a.kind, a.topic or a.broker) for a in SCENARIOS["broker-dies"].expected}
    by_reason: dict[str, list[tuple[str, str]]] = {}
    for reason, detail, raw in quarantined:
        by_reason.setdefault(reason, []).append((detail, raw))
    # every line of noise is bad input, a line that is not UTF-8 naming its file
    assert set(by_reason) <= {"not_utf8", "not_json", "corrupt_file"}
    assert "replayed" not in {raw for _, raw in by_reason.get("not_json", [])}
    assert all(
        d.endswith(f", in {a}") or d.endswith(f", in {spool / 'b-noise.jsonl'}")
        for d, _ in by_reason["not_utf8"]
    )
    assert any(d.endswith(f", in {a}") for d, _ in by_reason["not_utf8"])
    # each damaged compressed file once, by path; the empty file gave nothing
    assert sorted(raw for _, raw in by_reason["corrupt_file"]) == [str(truncated), str(false)]

    # a restart goes on from its checkpoint: nothing read or quarantined again
    proc = _stream(tmp_path, env, 2)
    try:
        wait_for(
            lambda: "stream started" in (tmp_path / "stream2.log").read_text(),
            120,
            "the restarted job",
            interval=0.5,
        )
        done = _publish(spool, "g-done.jsonl", _lines(_moved(dies, "Done", 2_000_000)))
        wait_for(lambda: "Done" in clusters(), 120, f"{done.name} read", interval=0.5)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rows("SELECT reason, detail, raw FROM quarantine ORDER BY seq") == quarantined
