"""The settings a remedy's run reads, shared by ``routewatch remedy`` and the API."""

from __future__ import annotations

from pydantic import Field

from routewatch.remedy.run import Request
from routewatch.settings import ClusterAccessSettings

__all__ = ["RemedySettings"]


class RemedySettings(ClusterAccessSettings):
    """Built once, in ``routewatch remedy`` (and, through ``ApiSettings``, in the API)."""

    remedy_verify_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=600,
        description="How long an apply re-reads every NameServer for its changes to show "
        "(a broker registers a change at once; its next periodic registration is due within "
        "30 s).",
    )
    remedy_request_timeout_s: float = Field(
        default=5.0, gt=0, le=60, description="Seconds to wait for one admin request's answer."
    )

    def request(
        self, alert_id: str, actor: str, *, apply: bool, alternative: bool, allow_loss: bool
    ) -> Request:
        return Request(
            alert_id=alert_id,
            actor=actor,
            apply=apply,
            alternative=alternative,
            allow_loss=allow_loss,
            verify_timeout_s=self.remedy_verify_timeout_s,
            request_timeout_s=self.remedy_request_timeout_s,
            credentials=self.credentials(),
        )
