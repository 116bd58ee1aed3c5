from __future__ import annotations

from pathlib import Path

import pytest

from routewatch.settings import Settings, SettingsError, load


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "DATA_DIR",
        "STORE_URL",
        "SPOOL_DIR",
        "KAFKA_BOOTSTRAP",
        "KAFKA_TOPIC",
        "KAFKA_API_VERSION",
    ):
        monkeypatch.delenv(f"ROUTEWATCH_{name}", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


def test_defaults_live_under_the_users_data_directory(tmp_path: Path) -> None:
    settings = load(Settings)

    data_dir = tmp_path / "xdg" / "routewatch"
    assert settings.data_dir == data_dir
    assert settings.store_url == f"sqlite:///{data_dir / 'routewatch.db'}"
    assert settings.spool_dir == data_dir / "spool"
    assert settings.checkpoint_dir == data_dir / "checkpoints"
    assert settings.kafka_topic == "routewatch.events"
    assert settings.kafka_api_version is None


def test_derived_paths_follow_the_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROUTEWATCH_DATA_DIR", str(tmp_path / "rw"))

    settings = load(Settings)

    assert settings.store_url == f"sqlite:///{tmp_path / 'rw' / 'routewatch.db'}"
    assert settings.spool_dir == tmp_path / "rw" / "spool"


@pytest.mark.parametrize(
    ("text", "expected"), [("0.9", (0, 9)), ("2.8.1", (2, 8, 1)), ("auto", None), ("", None)]
)
def test_kafka_api_version_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, text: str, expected: tuple[int, ...] | None
) -> None:
    monkeypatch.setenv("ROUTEWATCH_KAFKA_API_VERSION", text)

    assert load(Settings).kafka_api_version == expected


@pytest.mark.parametrize(
    ("name", "value", "sentence"),
    [
        (
            "DATA_DIR",
            "relative/dir",
            "ROUTEWATCH_DATA_DIR must be an absolute path, got 'relative/dir'",
        ),
        (
            "STORE_URL",
            "mysql://x",
            "ROUTEWATCH_STORE_URL must be sqlite:///<absolute path> or "
            "postgresql://..., got 'mysql://x'",
        ),
        ("SPOOL_DIR", "spool", "ROUTEWATCH_SPOOL_DIR must be an absolute path, got 'spool'"),
        (
            "KAFKA_API_VERSION",
            "zero",
            "ROUTEWATCH_KAFKA_API_VERSION must look like 0.9 or 2.8.1, or be 'auto', got 'zero'",
        ),
    ],
)
def test_a_bad_setting_is_one_clear_sentence(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, sentence: str
) -> None:
    monkeypatch.setenv(f"ROUTEWATCH_{name}", value)

    with pytest.raises(SettingsError) as raised:
        load(Settings)

    assert str(raised.value) == f"{sentence}; fix the environment and start again."
