"""``/runbook``: the alert catalogue (docs/alerts.md) as a page, one section per kind at
``#<kind in lower case>`` — where each alert's ``runbook_url`` in Alertmanager points by default
(docs/alertmanager.md)."""

from __future__ import annotations

import functools
import html
import re
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from api.problems import ProblemError

__all__ = ["CATALOGUE", "router"]

# the catalogue of the clone the API runs from (routewatch is installed editable from it)
CATALOGUE = Path(__file__).resolve().parents[2] / "docs" / "alerts.md"

router = APIRouter(tags=["alerts"])


def _anchor(text: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation but ``-`` and ``_``
    dropped, spaces as ``-`` (``## `PARTIAL_COVERAGE` `` -> ``partial_coverage``)."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


@functools.cache
def _page(path: Path, mtime: float) -> str:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(path.read_text(encoding="utf-8"))
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            token.attrSet("id", _anchor(tokens[i + 1].content.replace("`", "")))
    body = md.renderer.render(tokens, md.options, {})
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{html.escape('routewatch alerts')}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;"
        "padding:0 1rem;line-height:1.5}code,pre{background:#f4f4f4}pre{padding:.5rem;"
        "overflow-x:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:.2rem .4rem;vertical-align:top}</style></head><body>"
        f"{body}</body></html>"
    )


@router.get(
    "/runbook", summary="The alert catalogue, one section per kind", response_class=HTMLResponse
)
def runbook() -> HTMLResponse:
    if not CATALOGUE.is_file():
        raise ProblemError(
            404,
            "No catalogue",
            "This installation has no docs/alerts.md to serve: set ROUTEWATCH_RUNBOOK_URL for "
            "routewatch notify to where your team reads it.",
        )
    return HTMLResponse(_page(CATALOGUE, CATALOGUE.stat().st_mtime))
