"""A RocketMQ 5 proxy's log, read as ``tail -F`` would: each line saying that the proxy found no
route for a topic a gRPC client asked for becomes a ``proxy_route_miss`` event (docs/collect.md,
"gRPC clients' misses").

The proxy writes, from its ``MQClientAPIImpl``, one WARN line per NameServer lookup that finds
nothing (``get Topic [T] RouteInfoFromNameServer is not exist value``): at a client's first ask,
then at most once per refresh of its route cache (20 s) while clients keep asking. With the
proxy's own logging configuration (``rmq.proxy.logback.xml`` in its jar) the line goes to
``~/logs/rocketmqlogs/broker_default.log`` as ``%d{yyy-MM-dd HH:mm:ss,GMT+8} %p %t - %m``: the
time to the second in UTC+8 whatever the host's zone, the level, the thread. Only lines from
the proxy's gRPC request threads (``Grpc…``) count: the proxy's own lookups (its heartbeat topic
at start, on ``main``) are not a client's.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import re
from pathlib import Path
from typing import IO

from routewatch.events import ProxyRouteMiss

__all__ = ["ProxyLog", "miss_id", "parse_miss"]

log = logging.getLogger("routewatch.collect")

# date (ms when the pattern has them), level, thread (bracketed or not), an optional logger name,
# then " - " and the message
_MISS = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[.,](?P<ms>\d{3}))?\s+WARN\s+"
    r"\[?(?P<thread>Grpc[^\]\s]*)\]?(?:\s+\S+)?\s+-\s+"
    r"get Topic \[(?P<topic>[^\]]+)\] RouteInfoFromNameServer is not exist value\s*$"
)
_READ_MAX = 4 << 20  # bytes read per look: a backlog is caught up over several


def parse_miss(line: str, utc_offset: dt.timedelta) -> tuple[int, str, str] | None:
    """(epoch ms, topic, thread) of a gRPC client's route miss in one line of the proxy's log,
    its time written at ``utc_offset``; ``None`` for any other line."""
    m = _MISS.match(line)
    if m is None:
        return None
    local = dt.datetime.strptime(m["date"], "%Y-%m-%d %H:%M:%S")
    at = local.replace(tzinfo=dt.timezone(utc_offset))
    return int(at.timestamp()) * 1000 + int(m["ms"] or 0), m["topic"], m["thread"]


class ProxyLog:
    """One proxy's log file, followed across its rolls (a new file under the same name) and
    truncations. It starts at the file's end — what the proxy wrote before is not read — unless
    ``from_start`` (``collect --once``: one look at the whole file)."""

    def __init__(
        self,
        path: Path,
        cluster: str,
        proxy: str,
        utc_offset_h: float = 8.0,
        *,
        from_start: bool = False,
    ) -> None:
        self.path = path
        self.cluster = cluster
        self.proxy = proxy
        self.utc_offset = dt.timedelta(hours=utc_offset_h)
        self._file: IO[bytes] | None = None
        self._inode: int | None = None
        self._rest = b""  # a line not yet ended
        self._missing_said = False
        self._open(at_end=not from_start)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self._inode = None, None

    def _open(self, *, at_end: bool) -> None:
        try:
            f = self.path.open("rb")
        except FileNotFoundError:
            if not self._missing_said:
                log.warning(
                    "the proxy log %s does not exist (yet): its lines are read from when it "
                    "appears; check ROUTEWATCH_COLLECT_PROXY_LOGS if it never does.",
                    self.path,
                )
                self._missing_said = True
            return
        self._missing_said = False
        if at_end:
            f.seek(0, os.SEEK_END)
        self._file, self._inode, self._rest = f, os.fstat(f.fileno()).st_ino, b""

    def read(self) -> list[ProxyRouteMiss]:
        """The misses written since the last look."""
        lines: list[bytes] = []
        if self._file is None:
            self._open(at_end=False)  # appeared after the start: all of it is new
        if self._file is not None:
            lines += self._drain()
            try:
                st = self.path.stat()
            except FileNotFoundError:
                st = None  # rolled, the new one not there yet: keep the old one open
            if st is not None and st.st_ino != self._inode:
                # rolled: the old file's last lines (those written since the read above too),
                # then the new one from its start
                lines += self._drain()
                self.close()
                self._open(at_end=False)
                lines += self._drain()
            elif st is not None and self._file.tell() > st.st_size:
                self._file.seek(0)  # truncated in place
                self._rest = b""
                lines += self._drain()
        return [e for e in map(self._event, lines) if e is not None]

    def _drain(self) -> list[bytes]:
        assert self._file is not None
        data = self._rest + self._file.read(_READ_MAX)
        *lines, self._rest = data.split(b"\n")
        return lines

    def _event(self, line: bytes) -> ProxyRouteMiss | None:
        found = parse_miss(line.decode(errors="replace").rstrip("\r"), self.utc_offset)
        if found is None:
            return None
        ts, topic, thread = found
        return ProxyRouteMiss(
            ts=ts,
            cluster=self.cluster,
            event_id=miss_id(self.proxy, ts, thread, topic),
            proxy=self.proxy,
            topic=topic,
            thread=thread,
        )


def miss_id(proxy: str, ts: int, thread: str, topic: str) -> str:
    """A miss's ``event_id``, from its line: the same line read twice (``collect --once`` run
    again, or two collectors on one log) is one event to the job, which drops the repeat as a
    duplicate (the proxy logs a topic's miss at most once per 20 s, so two lines never share
    all four)."""
    digest = hashlib.sha1(f"{proxy}|{ts}|{thread}|{topic}".encode()).hexdigest()[:20]
    return f"proxylog-{digest}"
