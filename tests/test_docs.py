"""The operations guide lists every setting of every process, by its environment variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.settings import ApiSettings
from emitter.settings import EmitterSettings
from routewatch.settings import ENV_PREFIX, Settings
from streaming.settings import StreamingSettings

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("settings", [Settings, EmitterSettings, StreamingSettings, ApiSettings])
def test_every_setting_is_in_the_operations_guide(settings: type[Settings]) -> None:
    guide = (REPO / "docs" / "operations.md").read_text()
    missing = [
        f"{ENV_PREFIX}{name.upper()}"
        for name in settings.model_fields
        if f"`{ENV_PREFIX}{name.upper()}`" not in guide
    ]
    assert missing == []
