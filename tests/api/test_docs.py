"""``/docs`` and ``/redoc`` on a host without internet: every script, style sheet and icon they
load is served by the API itself (FastAPI's own pages load Swagger UI from a CDN and stay blank
offline). No store is needed: the pages do not read it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api import ApiSettings, create_app
from api.main import DOCS_ASSETS
from routewatch.settings import load

ASSET = re.compile(r"""(?:src|href)\s*[=:]\s*['"]([^'"]+)['"]""")


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    return TestClient(create_app(load(ApiSettings, data_dir=tmp_path)))


@pytest.mark.parametrize(
    ("page", "needs"),
    [
        ("/docs", {"swagger-ui-bundle.js", "swagger-ui.css"}),
        ("/redoc", {"redoc.standalone.js"}),
    ],
)
def test_the_api_pages_load_nothing_from_another_host(
    client: TestClient, page: str, needs: set[str]
) -> None:
    html = client.get(page)
    assert html.status_code == 200, html.text
    urls = set(ASSET.findall(html.text))
    assert not [u for u in urls if "://" in u or u.startswith("//")], urls
    assert {u.rsplit("/", 1)[-1] for u in urls} >= needs
    for url in urls:
        assert url.startswith(DOCS_ASSETS + "/"), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert len(asset.content) > 1_000, url
    assert "fonts.googleapis.com" not in html.text


def test_the_schema_the_docs_render_is_served_too(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert schema["openapi"].startswith("3.1")  # Swagger UI 5 renders 3.1; 4.x does not
    assert "/alerts" in schema["paths"]
