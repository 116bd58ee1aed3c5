"""What a spool holds: a live cluster's events (``routewatch collect``) or replayed traces
(``routewatch replay``), marked in the spool itself so that the two never mix in one job. The
emitter writes and claims the mark (``emitter.sinks``); ``routewatch watch`` reads it before it
starts anything."""

from __future__ import annotations

from pathlib import Path

from routewatch.errors import RoutewatchError

__all__ = ["ORIGINS", "ORIGIN_FILE", "spool_origin"]

# A dot file: Spark's file source and the spool's cleaning pass over it.
ORIGIN_FILE = ".routewatch-origin"
ORIGINS = {
    "live": "a live cluster's events (routewatch collect writes there)",
    "replayed": "replayed traces (routewatch replay wrote there)",
}


def spool_origin(spool: Path) -> str:
    """The origin ``spool`` is marked with ("live", "replayed"), or "" when it has no mark (an
    empty or new spool, or one written before marks existed)."""
    marker = spool / ORIGIN_FILE
    try:
        return marker.read_text().strip()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise RoutewatchError(f"cannot read {marker}: {exc.strerror}.") from None
