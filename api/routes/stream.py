"""``/alerts/stream``: Server-Sent Events of alerts opening, changing and resolving.

Events come from the store's append-only alert log; each carries the log's ``seq`` as its SSE
``id``, so a client that reconnects with ``Last-Event-ID`` resumes right after the last event it
saw (no gap, no repeat).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio.to_thread
import orjson
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from api.deps import QUERY_CHECKS, SQLITE_INT_MAX, AccessDep
from routewatch.store import StoreUnavailableError

router = APIRouter(tags=["alerts"], dependencies=QUERY_CHECKS)

log = logging.getLogger("routewatch.api")

POLL_S = 0.5
KEEPALIVE_S = 15.0


def _is_seq(value: str) -> bool:
    """Whether a Last-Event-ID is one of our sequence numbers (ASCII digits, in SQLite's range);
    any other value restarts the stream from the beginning."""
    digits = value.isascii() and value.isdigit() and len(value) <= len(str(SQLITE_INT_MAX))
    return digits and int(value) <= SQLITE_INT_MAX


@router.get(
    "/alerts/stream",
    summary="Server-Sent Events of alert changes, resumable with Last-Event-ID",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def alert_stream(
    request: Request,
    access: AccessDep,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    after: Annotated[
        int | None, Query(ge=0, le=SQLITE_INT_MAX, description="start after this log seq")
    ] = None,
) -> StreamingResponse:
    if after is not None:
        start = after
    elif last_event_id is not None and _is_seq(last_event_id):
        start = int(last_event_id)
    else:
        start = 0
    with access.borrowed(timeout_s=2.0):  # 503 now if unreachable
        pass

    def read(after_seq: int) -> list[dict[str, Any]] | None:
        """The next log rows, read in a worker thread (the store's drivers block) on a kept
        connection; None when the store became unavailable, which ends the stream (the client
        reconnects)."""
        try:
            with access.borrowed(timeout_s=2.0) as store:
                return store.alert_log(after=after_seq, limit=500)
        except StoreUnavailableError as exc:
            log.warning("alert stream ended: %s", exc)
            return None

    async def events() -> AsyncIterator[bytes]:
        seq = start
        idle = 0.0
        yield b"retry: 2000\n\n"
        while not await request.is_disconnected():
            rows = await anyio.to_thread.run_sync(read, seq)
            if rows is None:
                return
            for row in rows:
                seq = row["seq"]
                data = orjson.dumps(row["alert"]).decode()
                yield f"id: {seq}\nevent: {row['change']}\ndata: {data}\n\n".encode()
            if rows:
                idle = 0.0
                continue
            await asyncio.sleep(POLL_S)
            idle += POLL_S
            if idle >= KEEPALIVE_S:
                idle = 0.0
                yield b": keep-alive\n\n"

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )
