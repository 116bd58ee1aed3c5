"""Errors as ``application/problem+json`` (RFC 9457), each with one sentence for a person."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from routewatch.store import StoreUnavailableError

__all__ = ["install_problem_handlers", "problem"]

PROBLEM_JSON = "application/problem+json"


class ProblemError(Exception):
    """An error answered as problem+json with ``status`` and one-sentence ``detail``."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        self.status, self.title, self.detail = status, title, detail


def problem(status: int, title: str, detail: str) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON)


def _validation_sentence(exc: RequestValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("query", "path", "body"))
    return f"The parameter {where or 'value'} is invalid: {first.get('msg', 'bad value')}."


def install_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(ProblemError)
    async def _problem(request: Request, exc: ProblemError) -> JSONResponse:
        return problem(exc.status, exc.title, exc.detail)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return problem(422, "Invalid request", _validation_sentence(exc))

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else "The request failed."
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"There is no resource at {request.url.path}."
        return problem(exc.status_code, "Error", detail)

    @app.exception_handler(StoreUnavailableError)
    async def _store(request: Request, exc: StoreUnavailableError) -> JSONResponse:
        return problem(503, "Store unavailable", f"{exc} Try again shortly.")
