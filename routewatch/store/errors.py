"""The store's errors: what its callers (the job, the API) see instead of a driver's.

:class:`StoreUnavailableError` (and :class:`StoreBusyError`, one kind of it) means "try again":
the job retries its write, the API answers 503. Any other :class:`StoreError` is a fault (a bug, a
damaged file) and is raised as such, with the driver's error as its cause.
"""

from __future__ import annotations

from routewatch.errors import RoutewatchError

__all__ = ["StoreBusyError", "StoreError", "StoreUnavailableError", "fault", "one_line"]


class StoreError(Exception):
    """The store failed. ``reason`` is the driver's message, in one line."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class StoreUnavailableError(StoreError, RoutewatchError):
    """The store cannot be reached or is busy: try again."""


class StoreBusyError(StoreUnavailableError):
    """Another connection holds the lock the store needs: try again shortly."""


def one_line(exc: BaseException) -> str:
    """A driver's error as one line (psycopg's span several), without a final period."""
    return " ".join(str(exc).split()).rstrip(".")


def fault(where: str, exc: BaseException) -> StoreError:
    """A driver's error that is not "try again", as the store's: it names the store."""
    reason = one_line(exc)
    return StoreError(f"the store at {where} failed: {reason}.", reason)
