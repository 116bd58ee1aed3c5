"""The ``routewatch`` command line.

Subcommands are contributed by the packages that implement them through the
``routewatch.commands`` entry-point group: each entry point names a function
``register(subparsers)`` that adds one subcommand and sets its ``handler(args) -> int`` with
``set_defaults``. The core never imports emitter, streaming or api by name, and ``--help``
lists exactly the subcommands that are installed and work.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points

from routewatch.errors import RoutewatchError

__all__ = ["COMMAND_GROUP", "build_parser", "main", "plain_text"]

COMMAND_GROUP = "routewatch.commands"

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def plain_text(doc: str | None, paragraphs: int | None = None) -> str:
    """A docstring as plain text for ``--help``: the first ``paragraphs`` paragraphs (all by
    default) without reStructuredText's inline markup (double backquotes, roles such as
    ``:func:``, bold); indented blocks (usage examples) are left out, since argparse would run
    them into the text."""
    blocks = [
        " ".join(block.split())
        for block in re.split(r"\n\s*\n", inspect.cleandoc(doc or ""))
        if block.strip() and not block.startswith((" ", "\t"))
    ]
    text = "\n\n".join(blocks if paragraphs is None else blocks[:paragraphs])
    text = re.sub(r":[a-z:]+:`([^`]*)`", r"\1", text)
    return text.replace("``", "").replace("**", "")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every installed subcommand, in name order; with ``only``, that one alone
    when it is installed (its package imported, and no other: each command's process holds
    only what it runs)."""
    parser = argparse.ArgumentParser(
        prog="routewatch",
        description="Watch Apache RocketMQ topic routes converge, and alert when they do not.",
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    commands = sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name)
    if only in {ep.name for ep in commands}:
        commands = [ep for ep in commands if ep.name == only]
    for ep in commands:
        register: Register = ep.load()
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; user errors are printed as one sentence with exit status 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=argv[0] if argv else None)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args))
    except RoutewatchError as exc:
        print(f"routewatch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("routewatch: interrupted.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
