"""Stage 2, track clusters: the engine's step as a Spark stateful processor, one state bucket
per group.

Each cluster's state is in shards by topic, as many as state buckets, and each shard lives in
one bucket (``streaming.engine.shards``), a group of the stateful stage, so that Spark runs the
buckets as parallel tasks — also for one large cluster; every bucket also receives every block
summary of the batch, from which it keeps the whole stream's clock (``streaming.engine.clock``).
Each micro-batch, the processor turns the read stage's rows into arrivals, their priors and bad
lines and calls the engine's one step function
(:class:`streaming.engine.step.Step`) over the bucket's state; it only adapts pandas and Spark's
``MapState`` to the step's :class:`~streaming.engine.entries.Entries`. What is stored where is
the engine's business (:mod:`streaming.engine.layout`); Spark keeps it in its state store
(RocksDB), checkpointed with the query, so a restart resumes exactly.

All the state is one map state variable, ``entries`` (:data:`STATE_VARIABLES`): Spark builds
and binds encoders in the JVM for every state variable a task declares, every batch (about
16 ms each here).

Output rows are changes (:class:`routewatch.changes.ChangeRow`, in Spark's terms
:data:`CHANGES_SCHEMA`).
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark import TaskContext
from pyspark.sql.streaming.stateful_processor import (
    MapState,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from routewatch.changes import BadLine, ChangeRow
from streaming.engine.clock import Block, batch_max, priors
from streaming.engine.compact import held_form
from streaming.engine.intake import dedupe_id
from streaming.engine.shards import shard_bucket
from streaming.engine.step import Step
from streaming.engine.stream import Arrival
from streaming.stages.read import BATCH_ID, unpack_columns

__all__ = [
    "CHANGES_SCHEMA",
    "STATE_VARIABLES",
    "StreamProcessor",
    "changes_frame",
    "schema",
]

# The processor's state variables, as checkpoints know them: name -> (kind, key schema (maps),
# value schema), in Spark's DDL (see docs/operations.md, Checkpoints). One map: its entries are
# named below and hold bytes (JSON, or packed held events).
STATE_VARIABLES: dict[str, tuple[str, str | None, str]] = {
    "entries": ("map", "entry string", "data binary"),
}
_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "long": LongType(),
    "int": IntegerType(),
    "binary": BinaryType(),
}


def schema(ddl: str) -> StructType:
    """A state schema in DDL (``name type, ...``, of the types above) as the struct Spark parses
    it to. Built here: the state API parses a DDL string in the JVM, a round trip per use, and
    a processor declares its variables in every task, every batch."""
    fields = []
    for column in ddl.split(","):
        name, type_name = column.split()
        fields.append(StructField(name, _TYPES[type_name], True))
    return StructType(fields)


def _ddl(record: type) -> str:
    """A record's fields as a Spark DDL string (str: string, int: long; every column may be
    null)."""
    names = {str: "string", int: "long"}
    columns = []
    for name, hint in typing.get_type_hints(record).items():
        (base,) = [t for t in typing.get_args(hint) or (hint,) if t is not type(None)]
        columns.append(f"{name} {names[base]}")
    return ", ".join(columns)


# the output's columns, in Spark's DDL: those of a change row
CHANGES_SCHEMA = _ddl(ChangeRow)


def changes_frame(rows: list[ChangeRow]) -> pd.DataFrame:
    """Change rows as the processor yields them."""
    return pd.DataFrame(rows, columns=list(ChangeRow._fields)).astype({"at": "Int64"})


# what the processor reads of the read stage's rows, in this order
_COLUMNS = [
    *("cluster", "event_id", "ts", "seq", "value", "reason", "detail"),
    *("arrival", "prior", "held", "table", "owner"),
]


class _Entries:
    """The step's entries over the processor's ``MapState``: bytes by entry name."""

    def __init__(self, state: MapState) -> None:
        self.state = state

    def get(self, name: str) -> bytes | None:
        row = self.state.getValue((name,))
        return bytes(row[0]) if row else None

    def put(self, name: str, data: bytes) -> None:
        self.state.updateValue((name,), (data,))

    def remove(self, name: str) -> None:
        self.state.removeKey((name,))


def _batch_id() -> int | None:
    """The micro-batch this task is part of (None outside a streaming query)."""
    context = TaskContext.get()
    batch = None if context is None else context.getLocalProperty(BATCH_ID)
    return None if batch is None else int(batch)


class StreamProcessor(StatefulProcessor):
    """Feeds a state bucket's events through :class:`StreamEngine`: its intake, the whole
    stream's clock, and each of its clusters' :class:`ClusterEngine`; bad input becomes
    ``bad`` change rows.

    ``final``: the input is finite and this is its only batch (``evaluate``): everything held
    back by the lateness bound is applied at the end. ``keys``: the grouping key of each state
    bucket (``streaming.pipeline.state_keys``), from which a group knows which bucket it is;
    ``shards``: each cluster's shards (as many as buckets by default).
    """

    def __init__(
        self,
        lateness_ms: int,
        dedupe_horizon_ms: int,
        keys: list[int],
        final: bool = False,
        shards: int | None = None,
    ) -> None:
        self.lateness_ms, self.dedupe_horizon_ms = lateness_ms, dedupe_horizon_ms
        self.keys = keys
        self.final = final
        self.shards = shards or len(keys)

    def _step(self, bucket: int) -> Step:
        """The step of state bucket ``bucket``: each cluster in ``shards`` shards, of which it
        holds those that live in it."""
        n = len(self.keys)

        def mine(cluster: str, shard: int) -> bool:
            return shard_bucket(cluster, shard, n) == bucket

        return Step(self.lateness_ms, self.dedupe_horizon_ms, shards=self.shards, mine=mine)

    def init(self, handle: StatefulProcessorHandle) -> None:
        _, key_ddl, value_ddl = STATE_VARIABLES["entries"]
        assert key_ddl is not None
        self.entries = _Entries(handle.getMapState("entries", schema(key_ddl), schema(value_ddl)))

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        columns = unpack_columns([bytes(c) for frame in rows for c in frame["events"]], _COLUMNS)
        arrivals: list[Arrival] = []
        keys: list[str] = []
        own: list[int | None] = []
        forms: list[str | None] = []
        tables: list[str | None] = []
        owners: list[str | None] = []
        blocks: list[Block] = []
        bad: list[tuple[str | None, BadLine]] = []
        bucket = self.keys.index(int(key[0]))
        for cluster, eid, ts, seq, value, reason, detail, arrival, prior, held, table, owner in zip(
            *columns.values(), strict=True
        ):
            if value is None:
                blocks.append(Block(arrival, ts))
            elif reason is None:
                arrivals.append((dedupe_id(cluster, eid), ts, seq, value))
                keys.append(arrival)
                own.append(prior)
                forms.append(None if held is None else held_form(held, value))
                tables.append(table)
                owners.append(cluster if owner == bucket else None)
            else:
                bad.append((cluster, BadLine(reason, detail, value)))
        out = self._step(bucket)(
            self.entries,
            arrivals,
            final=self.final,
            bad=bad,
            priors=priors(keys, own, blocks),
            batch_max=batch_max(blocks),
            compact=forms,
            owners=owners,
            tables=tables,
            batch=_batch_id(),
        )
        if out:
            yield changes_frame(out)

    def close(self) -> None:
        pass
