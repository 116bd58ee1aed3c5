"""The console's templates (Jinja2, autoescaped) and the filters they use."""

from __future__ import annotations

import datetime
import functools
import json
import re
import urllib.parse
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

__all__ = ["STATIC", "render"]

HERE = Path(__file__).resolve().parent
STATIC = HERE / "static"
_COMMAND = re.compile(r"`([^`]+)`")


def _iso(ms: int) -> str:
    at = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _segment(value: Any) -> str:
    """One path segment of a link, with ``/``, ``%`` and the rest escaped."""
    return urllib.parse.quote(str(value), safe="")


def _remedy(text: str) -> Markup:
    """A remedy with its commands (between backticks) as code, every part escaped."""
    out, last = [], 0
    for m in _COMMAND.finditer(text):
        out.append(escape(text[last : m.start()]))
        out.append(Markup("<code>{}</code>").format(m.group(1)))
        last = m.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


def _pretty(evidence: Any) -> str:
    return json.dumps(evidence, indent=2, sort_keys=True, ensure_ascii=False)


def _percent(coverage: float | None) -> str:
    return "—" if coverage is None else f"{coverage:.0%}"


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3g} s" if value < 100 else f"{value / 60:.1f} min"


def _alike(namesrvs: dict[str, list[Any]]) -> bool:
    return len({tuple(sorted({q.broker for q in queues})) for queues in namesrvs.values()}) <= 1


@functools.cache
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        iso=_iso,
        u=_segment,
        remedy=_remedy,
        pretty=_pretty,
        percent=_percent,
        alike=_alike,
        seconds=_seconds,
    )
    return env


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)
