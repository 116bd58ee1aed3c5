"""An alert's fields are named in three places: the engine that raises it, the store's table,
and the API's model. They must name the same fields, or one silently drops one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from api.models import AlertPublic
from routewatch.store import open_store
from streaming.engine.alerts import Alert

# the store adds the wall clock of the first write; the API adds the acknowledgement state
STORE_ADDS = {"detected_at"}
ACK_FIELDS = {"acked_at", "acked_by", "silenced_until"}


def test_the_engine_the_store_and_the_api_name_the_same_alert_fields(tmp_path: Path) -> None:
    engine = [f.name for f in dataclasses.fields(Alert)]
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    table = [row[1] for row in store.db.execute("PRAGMA table_info(alerts)").fetchall()]
    acks = {row[1] for row in store.db.execute("PRAGMA table_info(alert_acks)").fetchall()}

    assert set(table) == set(engine) | STORE_ADDS
    assert set(AlertPublic.model_fields) == set(engine) | STORE_ADDS | ACK_FIELDS
    assert acks >= ACK_FIELDS
