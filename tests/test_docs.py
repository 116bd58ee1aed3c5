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


# Only `.ci/install --test` installs what the tests and benchmarks need beyond the virtualenv.
TEST_TOOLS = ("kafka", "prometheus", "promtool", "postgres")
HINT_PLACES = (
    *("README.md", "docs", "routewatch", "emitter", "streaming", "api", "dashboards"),
    *("benchmarks", "tests/support"),
)


def test_every_install_hint_for_the_test_tools_names_the_command_that_installs_them() -> None:
    wrong = []
    for place in HINT_PLACES:
        root = REPO / place
        for path in [root] if root.is_file() else sorted(root.rglob("*")):
            if path.suffix not in (".py", ".md", ".sh", ".txt") or not path.is_file():
                continue
            lines = path.read_text(errors="replace").splitlines()
            for i, line in enumerate(lines):
                rest = line.split(".ci/install", 1)
                if len(rest) == 1 or rest[1].startswith(" --test"):
                    continue
                around = " ".join(lines[max(i - 1, 0) : i + 2]).lower()
                if any(tool in around for tool in TEST_TOOLS):
                    wrong.append(f"{path.relative_to(REPO)}:{i + 1}: {line.strip()}")
    assert wrong == []


def test_kafka_missing_says_to_run_the_test_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.kafka import kafka_home

    monkeypatch.setenv("ROUTEWATCH_TEST_KAFKA_HOME", str(tmp_path))

    with pytest.raises(RuntimeError, match=r"run `bash \.ci/install --test`"):
        kafka_home()
