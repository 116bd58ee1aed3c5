"""``routewatch reset``: what resetting the job deletes — every source's checkpoint and the
store they share (docs/operations.md, Resetting the job), and with ``--spool`` the spool's files
— and the checks before it.

The spool's files and the Kafka topic are input and stay unless asked: the next job reads again
what they still hold. The checkpoints of both sources go with the store, since both jobs write
to it: a checkpoint kept beside a new store would resume state whose alerts the store no longer
holds. ``--spool`` also empties the spool, mark of what it holds included, so that a data
directory a replay wrote can take a live cluster's events (and the other way).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from routewatch.errors import RoutewatchError
from routewatch.store.backend import locate
from routewatch.store.reset import delete_store, last_report_ms
from streaming.settings import StreamingSettings

__all__ = [
    "RECENT_REPORT_S",
    "RESET_COMMAND",
    "SOURCES",
    "checkpoints",
    "reset_job",
    "running_job",
    "spool_files",
    "what_reset_deletes",
]

SOURCES = ("spool", "kafka")  # the job's sources, each with a checkpoint of its own

# what the job's refusals name: the command that resets it
RESET_COMMAND = "routewatch reset --yes"

# A job reports its progress every batch and every 10 s while idle: one that reported within
# this many seconds may still run.
RECENT_REPORT_S = 30.0


def checkpoints(settings: StreamingSettings) -> list[Path]:
    """The checkpoints of every source that has one."""
    return [settings.checkpoint_dir / s for s in SOURCES if (settings.checkpoint_dir / s).exists()]


def spool_files(settings: StreamingSettings) -> list[Path]:
    """Every file of the spool directory — what the job reads, files being written, and the
    mark of what the spool holds (its subdirectories are not the spool's and stay)."""
    spool = settings.spool_dir
    return sorted(p for p in spool.iterdir() if p.is_file()) if spool.is_dir() else []


def _spool_words(files: list[Path], spool: Path) -> str:
    return f"the spool's {len(files)} file(s) in {spool} (its events and its mark)"


def what_reset_deletes(settings: StreamingSettings, *, spool: bool = False) -> list[str]:
    """What a reset would delete, for the operator to read first (``spool``: the spool's files
    too)."""
    store = locate(settings.store_url)
    if store.file is None:
        stores = [f"every routewatch table of the store at {store.where}"]
    else:
        stores = [f"the store {store.where} (with its -wal and -shm files)"]
        stores = stores if store.file.exists() else []
    out = stores + [f"the checkpoint {p}" for p in checkpoints(settings)]
    files = spool_files(settings) if spool else []
    return out + ([_spool_words(files, settings.spool_dir)] if files else [])


def running_job(settings: StreamingSettings) -> str | None:
    """Why a job may still run — one reported to the store within :data:`RECENT_REPORT_S` and
    recorded no stop — in words; None when none does."""
    reported = last_report_ms(settings.store_url)
    ago = time.time() - reported / 1000 if reported is not None else None
    if ago is None or ago >= RECENT_REPORT_S:
        return None
    return (
        f"a routewatch job reported to the store at {locate(settings.store_url).where} "
        f"{max(ago, 0):.0f} s ago, so it may still run"
    )


def reset_job(
    settings: StreamingSettings, *, force: bool = False, spool: bool = False
) -> list[str]:
    """Delete every source's checkpoint and the store (``spool``: and the spool's files);
    returns what was deleted. Refuses, unless ``force``, while a job seems to run
    (:func:`running_job`)."""
    running = running_job(settings)
    if running is not None and not force:
        raise RoutewatchError(
            f"{running}: stop every routewatch stream that writes to this store and run the "
            "reset again (or add --force if none runs)."
        )
    # the store first: a store that cannot be deleted (a server down) leaves everything as it
    # was, and a reset run again finishes what one stopped midway left
    deleted = delete_store(settings.store_url)
    for checkpoint in checkpoints(settings):
        shutil.rmtree(checkpoint)
        deleted.append(f"the checkpoint {checkpoint}")
    files = spool_files(settings) if spool else []
    for path in files:
        path.unlink(missing_ok=True)
    if files:
        deleted.append(_spool_words(files, settings.spool_dir))
    return deleted
