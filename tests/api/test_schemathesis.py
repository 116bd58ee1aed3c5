"""The API against its own OpenAPI document, with schemathesis, in process.

Every operation is called with generated input, valid and invalid (schemathesis' examples,
coverage and fuzzing phases), over a copy of the real store the streaming job wrote. No answer
may be a server error; a 200 must match its declared schema; invalid input must be refused with a
4xx; an undeclared method must answer 405 with ``Allow``.

Three of schemathesis' checks are left out, because the document does not describe the errors
the API answers on purpose (docs/api.md): the 400/401/403/404/503 statuses and the
``application/problem+json`` type of every error, 422 included, are not declared
(``status_code_conformance``, ``content_type_conformance``); and a value the schema allows can
still be refused for what it means, such as a cursor this API never returned or an empty time
range (``positive_data_acceptance``).

Hypothesis runs derandomized, with a bounded number of examples per operation, so a run is
repeatable and takes seconds, not minutes. The schemathesis pytest plugin's fixture-based loader
does not run on this pytest (it uses ``Node._nodeid``, which pytest 9.2 no longer has), so the
document is loaded at import from an app over no store (the document does not depend on the
store), and each case is sent to the ``app`` fixture's application instead.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from schemathesis.generation.case import Case
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    positive_data_acceptance,
    status_code_conformance,
)

from api import ApiSettings, create_app
from routewatch.settings import load

TOKEN = "s3cret"
NOT_DOCUMENTED = [status_code_conformance, content_type_conformance, positive_data_acceptance]
# An alert stream does not end: read it for this long at most (it polls the store every 0.5 s).
STREAM_READ_S = 1.0  # generous: the first request migrates the copied store, slow on a busy machine

document = schemathesis.openapi.from_asgi(
    "/openapi.json", create_app(load(ApiSettings, data_dir=Path(tempfile.gettempdir())))
)
bounded = document.exclude(path="/alerts/stream")
endless = document.include(path="/alerts/stream")
settled = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture
def app(store_dir: Path, tmp_path: Path) -> FastAPI:
    """The app over a copy of the store (an accepted acknowledgement writes), with a token."""
    for path in store_dir.glob("routewatch.db*"):
        shutil.copy(path, tmp_path / path.name)
    return create_app(load(ApiSettings, data_dir=tmp_path, api_token=TOKEN))


@bounded.parametrize()
@settings(settled, max_examples=100)
def test_no_operation_answers_a_server_error_or_breaks_its_schema(
    case: Case[Any], app: FastAPI
) -> None:
    case.call_and_validate(app=app, excluded_checks=NOT_DOCUMENTED)


@endless.parametrize()
@settings(settled, max_examples=20)
def test_the_alert_stream_answers_no_server_error(case: Case[Any], app: FastAPI) -> None:
    case.call_and_validate(app=app, timeout=STREAM_READ_S, excluded_checks=NOT_DOCUMENTED)
