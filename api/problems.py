"""Errors as ``application/problem+json`` (RFC 9457), each with one sentence for a person."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from routewatch.store import StoreUnavailableError

__all__ = ["install_problem_handlers", "problem"]

PROBLEM_JSON = "application/problem+json"


class ProblemError(Exception):
    """An error answered as problem+json with ``status`` and one-sentence ``detail``."""

    def __init__(
        self, status: int, title: str, detail: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self.status, self.title, self.detail = status, title, detail
        self.headers = headers


def problem(
    status: int, title: str, detail: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def _validation_sentence(exc: RequestValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("query", "path", "body"))
    return f"The parameter {where or 'value'} is invalid: {first.get('msg', 'bad value')}."


def install_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(ProblemError)
    async def _problem(request: Request, exc: ProblemError) -> JSONResponse:
        return problem(exc.status, exc.title, exc.detail, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return problem(422, "Invalid request", _validation_sentence(exc))

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else "The request failed."
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"There is no resource at {request.url.path}."
        elif exc.status_code == 405 and detail == "Method Not Allowed":
            allowed = (exc.headers or {}).get("Allow", "")
            detail = (
                f"The method {request.method} is not allowed on {request.url.path}; use {allowed}."
            )
        # the headers carry what the status requires, such as Allow on a 405
        return problem(exc.status_code, "Error", detail, exc.headers)

    @app.exception_handler(StoreUnavailableError)
    async def _store(request: Request, exc: StoreUnavailableError) -> JSONResponse:
        """The store is unreachable, or briefly busy (a read locked out by another connection):
        503. Any other store error stays a server error."""
        return _unavailable(exc)


def _unavailable(exc: StoreUnavailableError) -> JSONResponse:
    """503, with the reason and what to do in one sentence."""
    reason = str(exc).rstrip(".")
    return problem(
        503, "Store unavailable", f"{reason[:1].upper()}{reason[1:]}; try again shortly."
    )
