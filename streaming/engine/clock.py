"""One clock over many state buckets: what each bucket must know of the arrivals of the others.

The stream's clusters are spread over state buckets (:mod:`streaming.engine.shards`), each with its
own intake and engines, so that Spark runs them as parallel tasks. The clock stays the whole
stream's: an event is late when it is more than the lateness bound older than the largest ``ts`` of
every valid event received before it, in any bucket (``streaming.engine.intake``). Rather than send
every event to one place, the read stage cuts each batch's arrivals into *blocks* — runs of
consecutive arrivals (the lines of one file block, or of one Kafka partition's slice) — and hands
every bucket, beside its own events, each block's summary (:class:`Block`: the arrival key of its
last event and its largest ``ts``); and each event carries the largest ``ts`` before it in its own
block (:func:`in_block_priors`). From those a bucket finds, for each of its events, the largest
``ts`` the whole stream received before it in the batch (:func:`priors`), and the batch's largest
(:func:`batch_max`): exactly what one intake over the whole stream would have seen, at the cost of
one small row per block and bucket.

Blocks need not be contiguous in the arrival order when the order is by event time (Kafka's
partitions interleaved by ``ts``): there every arrival before an event has a ``ts`` no larger
than its own, so nothing in the batch can make it late, and a block's summary counts only once
the whole block is before the event — a bound below the true prior, with the same verdicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["Block", "batch_max", "in_block_priors", "priors"]


class Block(NamedTuple):
    """A block of the batch's arrivals, as every bucket receives it: the arrival key of its last
    valid event, and the largest ``ts`` of its valid events."""

    end: str
    max_ts: int


def in_block_priors(ts: Sequence[int]) -> tuple[list[int | None], int | None]:
    """The ``ts`` of a block's valid events, in arrival order -> the largest ``ts`` before each
    (None for the first), and the block's largest."""
    out: list[int | None] = []
    running: int | None = None
    for t in ts:
        out.append(running)
        if running is None or t > running:
            running = t
    return out, running


def priors(
    arrivals: Sequence[str], own: Sequence[int | None], blocks: Sequence[Block]
) -> list[int | None]:
    """For each of a bucket's events (their arrival keys, sorted; ``own``: the largest ``ts``
    before each in its own block), the largest ``ts`` the whole batch received before it: its
    block's part, and every block that ended before it."""
    ends = sorted(blocks)
    out: list[int | None] = []
    done: int | None = None  # the largest ts of the blocks ended so far
    i = 0
    for key, prior in zip(arrivals, own, strict=True):
        while i < len(ends) and ends[i].end < key:
            if done is None or ends[i].max_ts > done:
                done = ends[i].max_ts
            i += 1
        if done is not None and (prior is None or done > prior):
            prior = done
        out.append(prior)
    return out


def batch_max(blocks: Sequence[Block]) -> int | None:
    """The largest ``ts`` of the whole batch."""
    return max((b.max_ts for b in blocks), default=None)
