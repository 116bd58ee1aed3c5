"""``routewatch stream`` removes the spool files it has read and committed once they are older
than ``ROUTEWATCH_SPOOL_RETENTION_HOURS``, and keeps the others."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from emitter.scenarios import SCENARIOS
from routewatch.codec import encode
from routewatch.events import Event
from routewatch.store import open_store
from routewatch.testing.processes import start_routewatch, wait_for

pytestmark = pytest.mark.spark


def _publish(spool: Path, name: str, events: list[Event], age_s: float = 0) -> Path:
    hidden = spool / f".{name}"
    hidden.write_bytes(b"".join(encode(e) + b"\n" for e in events))
    if age_s:
        past = time.time() - age_s
        os.utime(hidden, (past, past))
    return hidden.rename(spool / name)


def test_read_files_older_than_the_retention_are_removed(tmp_path: Path) -> None:
    data, spool, archive = tmp_path / "data", tmp_path / "data" / "spool", tmp_path / "archive"
    spool.mkdir(parents=True)
    events = SCENARIOS["broker-dies"].run(seed=1)
    third = len(events) // 3
    old = _publish(spool, "old.jsonl", events[:third], age_s=2 * 3600)
    new = _publish(spool, "new.jsonl", events[third : 2 * third])
    env = {
        **os.environ,
        "ROUTEWATCH_DATA_DIR": str(data),
        "ROUTEWATCH_TRIGGER_INTERVAL_S": "1",
        "ROUTEWATCH_SPOOL_RETENTION_HOURS": "1",
        "ROUTEWATCH_SPOOL_ARCHIVE_DIR": str(archive),
    }
    store_url = f"sqlite:///{data / 'routewatch.db'}"

    def batches() -> int:
        if not (data / "routewatch.db").exists():
            return 0
        store = open_store(store_url)
        try:
            return int(store.db.execute("SELECT COUNT(*) FROM batches").fetchone()[0])
        finally:
            store.close()

    log = tmp_path / "stream.log"  # (the job's log lines there too)
    proc = start_routewatch(["stream", "--source", "spool", "--log", str(log)], env, log)
    try:
        wait_for(lambda: batches() >= 1, 300, "the first batch", interval=0.5)
        assert old.exists()  # read, but its batch was not committed yet
        later = _publish(spool, "later.jsonl", events[2 * third :])
        wait_for(lambda: not old.exists(), 120, "the old file moved away", interval=0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (archive / "old.jsonl").exists()
    assert new.exists() and later.exists()  # within the retention
    assert (
        "1 spool file(s) read and committed before the retention moved to"
        in (tmp_path / "stream.log").read_text()
    )
