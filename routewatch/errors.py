"""The one exception type whose message is meant for a person."""

__all__ = ["RoutewatchError"]


class RoutewatchError(Exception):
    """Something the user can fix; the message is one sentence saying what and how.

    The command line prints it without a traceback and exits with status 2.
    """
