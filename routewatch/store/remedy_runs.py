"""The store's record of remedies (docs/remedies.md): every dry run and apply, audited, and the
applies running now, one per alert at a time."""

from __future__ import annotations

from typing import Any

import orjson

from routewatch.store.store import Store

__all__ = ["record_run", "release_lock", "remedy_runs", "take_lock"]


def record_run(store: Store, run: dict[str, Any]) -> int:
    """Audit one run (``Report.to_dict()`` of :mod:`routewatch.remedy.run`); its ``seq``."""
    with store.transaction() as db:
        db.execute(
            "INSERT INTO remedy_runs (alert_id, cluster, kind, mode, alternative, actor, "
            "started_at, ended_at, outcome, refusal, plan, steps) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run["alert_id"],
                run["cluster"],
                run["kind"],
                run["mode"],
                int(run["alternative"]),
                run["actor"],
                run["started_at"],
                run["ended_at"],
                run["outcome"],
                run["refusal"],
                orjson.dumps(run["plan"]).decode(),
                orjson.dumps(run["steps"]).decode(),
            ),
        )
        row = db.execute(
            "SELECT MAX(seq) FROM remedy_runs WHERE alert_id = ? AND started_at = ?",
            (run["alert_id"], run["started_at"]),
        ).fetchone()
    return int(row[0])


def remedy_runs(
    store: Store, *, alert_id: str | None = None, limit: int = 100
) -> list[dict[str, Any]]:
    """The audited runs, newest first (of one alert, or all)."""
    where, args = ("WHERE alert_id = ?", [alert_id]) if alert_id is not None else ("", [])
    rows = store.db.execute(
        f"SELECT * FROM remedy_runs {where} ORDER BY seq DESC LIMIT ?", [*args, limit]
    )
    out = []
    for r in rows:
        run = dict(r)
        run["alternative"] = bool(run["alternative"])
        run["plan"] = orjson.loads(run["plan"])
        run["steps"] = orjson.loads(run["steps"])
        out.append(run)
    return out


def take_lock(
    store: Store, alert_id: str, actor: str, now_ms: int, expires_ms: int
) -> dict[str, Any] | None:
    """Take the apply lock of ``alert_id``; None when taken, else the running apply's row (a
    row past its ``expires_at``, left by a process that died, gives way)."""
    with store.transaction() as db:
        db.execute(
            "DELETE FROM remedy_locks WHERE alert_id = ? AND expires_at <= ?", (alert_id, now_ms)
        )
        db.execute(
            "INSERT INTO remedy_locks (alert_id, actor, started_at, expires_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (alert_id) DO NOTHING",
            (alert_id, actor, now_ms, expires_ms),
        )
        row = db.execute(
            "SELECT actor, started_at, expires_at FROM remedy_locks WHERE alert_id = ?",
            (alert_id,),
        ).fetchone()
    held = dict(row)
    if (held["actor"], held["started_at"], held["expires_at"]) == (actor, now_ms, expires_ms):
        return None
    return held


def release_lock(store: Store, alert_id: str, started_ms: int) -> None:
    with store.transaction() as db:
        db.execute(
            "DELETE FROM remedy_locks WHERE alert_id = ? AND started_at = ?",
            (alert_id, started_ms),
        )
