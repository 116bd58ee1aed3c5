"""The docs hold to the code: every setting of every process is in the operations guide, the
event contract's examples read as they say, and install hints name the command that installs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from api.notify import NotifySettings
from api.settings import ApiSettings
from emitter.collect.settings import CollectSettings
from emitter.settings import EmitterSettings
from routewatch.events import EVENT_CLASSES
from routewatch.settings import ENV_PREFIX, Settings
from routewatch.validation import BAD_INPUT_REASONS, LINE_REASONS, READ_REASONS
from routewatch.wire import WireField, wire_fields
from streaming.settings import StreamingSettings
from streaming.stages.read import validate_batches

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "settings",
    [Settings, EmitterSettings, CollectSettings, StreamingSettings, ApiSettings, NotifySettings],
)
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


@pytest.mark.parametrize("name", ["grpc-client", "kafka", "rocketmq4", "rocketmq5", "spark-kafka"])
def test_a_missing_part_says_to_run_the_test_install(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from routewatch.testing import parts

    monkeypatch.setattr(parts, "CACHE", tmp_path)

    with pytest.raises(parts.PartMissingError, match=r"run `bash \.ci/install --test`"):
        parts.home(name)


def test_kafka_missing_says_to_run_the_test_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from routewatch.testing import parts
    from routewatch.testing.kafka import KafkaNotFoundError, kafka_lib

    monkeypatch.delenv("ROUTEWATCH_TEST_KAFKA_HOME", raising=False)
    monkeypatch.setattr(parts, "CACHE", parts.CACHE / "nothing-here")

    with pytest.raises(KafkaNotFoundError, match=r"run `bash \.ci/install --test`"):
        kafka_lib()


CONTRACT = REPO / "docs" / "contract.md"


def _read(lines: list[str]) -> dict[str, list[Any]]:
    """Lines through the streaming job's own first stage: its validation, reasons and details."""
    batch = pa.RecordBatch.from_pydict({"value": lines, "origin": ["docs"] * len(lines)})
    (out,) = validate_batches(iter([batch]))
    kept = out.filter(pc.is_valid(out.column("value")))  # (without the block's summary)
    columns: dict[str, list[Any]] = kept.to_pydict()
    return columns


def _unknown_keys(fields: tuple[WireField, ...], obj: dict[str, Any], path: str) -> list[str]:
    """Keys of ``obj`` that are no field of the contract (the reader would ignore them)."""
    known = {f.name: f for f in fields}
    unknown = [f"{path}.{key}" for key in obj if key not in known]
    for key, value in obj.items():
        f = known.get(key)
        if f is not None and f.kind == "map":
            for name, item in value.items():
                unknown += _unknown_keys(f.nested, item, f"{path}.{key}[{name!r}]")
        elif f is not None and f.kind == "array":
            for i, item in enumerate(value):
                unknown += _unknown_keys(f.nested, item, f"{path}.{key}[{i}]")
    return unknown


def test_every_contract_example_reads_as_an_event_of_its_type() -> None:
    examples = re.findall(r"^```json\n(.*?)^```$", CONTRACT.read_text(), flags=re.M | re.S)
    objs = [orjson.loads(text) for text in examples]
    read = _read([orjson.dumps(obj).decode() for obj in objs])  # one line each, as on the wire
    assert read["reason"] == [None] * len(objs), list(
        zip(read["reason"], read["detail"], strict=True)
    )
    assert read["type"] == [obj["type"] for obj in objs]
    assert read["event_id"] == [obj["event_id"] for obj in objs]
    # nothing in an example is ignored: a misspelt optional field would be, silently
    for obj in objs:
        assert _unknown_keys(wire_fields(obj["type"]), obj, obj["type"]) == []
    assert {obj["type"] for obj in objs} == set(EVENT_CLASSES)


def test_every_bad_input_example_gives_its_reason_and_detail() -> None:
    section = CONTRACT.read_text().split("## Bad input", 1)[1].split("\n## ", 1)[0]
    section = section.split("Two more reasons come from reading", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `(.+?)` \| `(.+)` \|$", section, flags=re.M)
    assert [reason for reason, _, _ in rows] == list(LINE_REASONS)
    read = _read([line for _, line, _ in rows])
    assert list(zip(read["reason"], read["detail"], strict=True)) == [(r, d) for r, _, d in rows]


def test_every_reading_reason_is_documented_and_a_line_not_utf8_gives_its_detail() -> None:
    section = CONTRACT.read_text().split("## Bad input", 1)[1].split("\n## ", 1)[0]
    table = section.split("Two more reasons come from reading", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \| `(.+)` \|$", table, flags=re.M)
    assert [reason for reason, _, _ in rows] == list(READ_REASONS)
    example = re.match(r"`(.+?)` in `(.+?)`", rows[0][1])
    assert example is not None
    line = example[1].encode().decode("unicode_escape").encode("latin-1")
    batch = pa.RecordBatch.from_pydict(
        {"value": [line], "origin": [f"0|file://{example[2]}|0"]},
        schema=pa.schema([("value", pa.binary()), ("origin", pa.string())]),
    )
    (out,) = validate_batches(iter([batch]))
    assert (out.column("reason")[0].as_py(), out.column("detail")[0].as_py()) == rows[0][::2]
    assert set(BAD_INPUT_REASONS) == set(READ_REASONS) | set(LINE_REASONS)


_NUMBERS = {
    w: n
    for n, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
        ]
    )
}
_KIND_COUNT = re.compile(
    r"\b("
    + "|".join(_NUMBERS)
    + r"|\d+)\s+(?:alert\s+)?kinds\b|catalogue's\s+("
    + "|".join(_NUMBERS)
    + r"|\d+)\b",
    re.IGNORECASE,
)


def test_every_count_of_alert_kinds_in_the_docs_is_the_catalogues() -> None:
    """A number of kinds said in the README or docs/ is len(ALERT_KINDS) (the API's enumeration
    is the AlertKind literal ALERT_KINDS derives from)."""
    from routewatch.alerts import ALERT_KINDS

    wrong = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        if path.name == "performance-notes.md":  # (history: the kinds of its day)
            continue
        for found in _KIND_COUNT.finditer(path.read_text()):
            word = (found.group(1) or found.group(2)).lower()
            count = int(word) if word.isdigit() else _NUMBERS[word]
            if count != len(ALERT_KINDS):
                wrong.append(f"{path.name}: {found.group(0)!r}")
    assert wrong == []
