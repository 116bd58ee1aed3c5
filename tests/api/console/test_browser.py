"""The console in a real browser (Debian's chromium, headless, through its chromedriver) over a
running ``routewatch api``: it lists the open alerts the API lists and each link leads to its
topic or broker; an alert the job opens appears within 2 s of its store write, without a reload;
no request leaves 127.0.0.1 and nothing is written to the browser's console; the keyboard
reaches every link and action, and Enter runs them; the actions ask for the token once per tab,
and a remedy's dry run shows its outcome under its alert."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from emitter.scenarios import SCENARIOS
from routewatch.codec import encode
from routewatch.settings import load
from routewatch.store import open_store
from routewatch.testing.browser import Browser, running_browser
from routewatch.testing.processes import api_answers, free_port, start_routewatch, stop, wait_for
from streaming.settings import StreamingSettings
from tests.support.stores import EngineJob

pytestmark = pytest.mark.slow

TOKEN = "console-token"
CLUSTER = "DefaultCluster"
ZONE = "America/New_York"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # a viewer whose local time is not the machine's (UTC here): the pages must convert
    with running_browser(timezone=ZONE) as b:
        yield b


def _api(data: Path, log: Path) -> tuple[str, object]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "ROUTEWATCH_DATA_DIR": str(data), "ROUTEWATCH_API_TOKEN": TOKEN}
    proc = start_routewatch(["api", "--port", str(port)], env, log)
    wait_for(lambda: api_answers(url, proc, log), 60, f"the API answering on {url}")
    return url, proc


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[str, EngineJob, list[list[str]]]]:
    """The API over a store holding the demo scenario's first 60 s; the rest, in batches of
    10 s, for a test to write."""
    job = EngineJob(load(StreamingSettings, data_dir=tmp_path))
    lines = [encode(e).decode() for e in SCENARIOS["demo-mixed"].run(seed=1)]
    start = orjson.loads(lines[0])["ts"]
    batches: list[list[str]] = [[]]
    for line in lines:
        at = orjson.loads(line)["ts"] - start
        index = 0 if at < 60_000 else 1 + (at - 60_000) // 10_000
        while len(batches) <= index:
            batches.append([])
        batches[index].append(line)
    job.write(batches[0])
    url, proc = _api(tmp_path, tmp_path / "api.log")
    try:
        yield url, job, [b for b in batches[1:] if b]
    finally:
        stop(proc)  # type: ignore[arg-type]


def _open_ids(url: str) -> list[str]:
    data = httpx.get(f"{url}/alerts", params={"state": "open"}, timeout=10).json()["data"]
    return sorted(a["id"] for a in data)


def _page_ids(browser: Browser) -> list[str]:
    """The alerts the Now page lists, read in one go (the page may replace the list at any
    moment: elements found before are gone after)."""
    found: list[str] = browser.driver.execute_script(
        "return [...document.querySelectorAll('#alerts li.alert')].map(e => e.dataset.alertId);"
    )
    return sorted(found)


def test_the_console_lists_the_open_alerts_and_each_link_leads_to_its_page(
    demo: tuple[str, EngineJob, list[list[str]]], browser: Browser
) -> None:
    url, job, rest = demo
    for lines in rest:
        job.write(lines)
    driver = browser.driver
    driver.get(f"{url}/")
    assert _page_ids(browser) == _open_ids(url) != []
    # times in the viewer's local time, the zone shown, never raw epoch
    assert driver.find_element("id", "zone").text == ZONE
    times = driver.find_elements("css selector", "time[data-ms]")
    assert times
    for t in times:  # (the scenario runs in January: New York is on EST, UTC-5)
        shown = driver.execute_script(
            "return new Date(Number(arguments[0])).toLocaleString('en-US', "
            "{timeZone: 'America/New_York', hour12: false});",
            t.get_attribute("data-ms"),
        )
        assert t.text.endswith("EST") and t.text != t.get_attribute("datetime"), t.text
        hour = shown.split(", ")[1][:2]
        assert f", {hour}:" in t.text or f" {hour}:" in t.text, (t.text, shown)
    links = [
        (a.get_attribute("href"), a.text)
        for a in driver.find_elements("css selector", "#alerts li.alert .what a")
    ]
    assert links
    for href, name in links:
        driver.get(href)
        assert name in driver.find_element("tag name", "h1").text
        assert "/ui/topics/" in href or "/ui/brokers/" in href
    # a topic's matrix, as the browser shows it, is its route as the API gives it
    driver.get(f"{url}/ui/topics/{CLUSTER}/StuckTopic")
    cells = driver.execute_script(
        "return [...document.querySelectorAll('#matrix td.held')].map(td => "
        "[td.closest('tr').dataset.namesrv, td.dataset.broker, td.innerText]);"
    )
    detail = httpx.get(f"{url}/topics/{CLUSTER}/StuckTopic", timeout=10).json()["current"]
    wanted = sorted(
        (ns, q["broker"], f"{q['read_queue_nums']}/{q['write_queue_nums']}")
        for ns, queues in detail["namesrvs"].items()
        for q in queues
    )
    assert sorted((ns, b, text.split(" ")[0]) for ns, b, text in cells) == wanted
    # RocketMQ's own topics are one click away
    driver.get(f"{url}/ui/topics")
    assert "TBW102" not in driver.find_element("tag name", "main").text
    driver.find_element("link text", "show them").click()
    wait_for(lambda: "TBW102" in driver.find_element("tag name", "main").text, 10, "TBW102")
    assert browser.errors() == []
    assert browser.hosts() == {"127.0.0.1"}


def test_an_alert_the_job_opens_appears_without_a_reload_within_2_s(
    demo: tuple[str, EngineJob, list[list[str]]], browser: Browser
) -> None:
    url, job, rest = demo
    driver = browser.driver
    driver.get(f"{url}/")
    driver.execute_script("window.__sameDocument = true;")
    before = set(_page_ids(browser))
    store = open_store(job.url)
    try:
        for lines in rest:
            seen = store.db.execute("SELECT MAX(seq) FROM alert_log").fetchone()[0] or 0
            job.write(lines)
            written = time.monotonic()
            opened = [
                r["alert_id"]
                for r in store.db.execute(
                    "SELECT alert_id FROM alert_log WHERE seq > ? AND change = 'opened'", (seen,)
                )
            ]
            new = [i for i in opened if i not in before and i in _open_ids(url)]
            if not new:
                continue
            wanted = set(new)

            def shown(wanted: set[str] = wanted) -> bool:
                return wanted <= set(_page_ids(browser))

            wait_for(
                shown,
                2,
                f"{new} on the page within 2 s of its store write",
                interval=0.05,
            )
            assert time.monotonic() - written <= 2.0
            break
        else:
            raise AssertionError("no batch of the scenario opened an alert")
    finally:
        store.close()
    assert driver.execute_script("return window.__sameDocument === true;")
    assert browser.errors() == []


FOCUSABLE = "a[href], button, select, input, summary"


def _focus_order(browser: Browser, limit: int = 400) -> list[int]:
    """The elements Tab reaches, in order, from the top of the page, as their indexes among
    the page's focusable elements, until it comes round again."""
    from selenium.webdriver.common.keys import Keys

    driver = browser.driver
    driver.execute_script("document.activeElement && document.activeElement.blur();")
    driver.find_element("tag name", "body").send_keys(Keys.TAB)
    order: list[int] = []
    for _ in range(limit):
        at = driver.execute_script(
            f"return [...document.querySelectorAll('{FOCUSABLE}')].indexOf(document.activeElement);"
        )
        if at in order or at < 0:
            break
        order.append(at)
        driver.switch_to.active_element.send_keys(Keys.TAB)
    return order


def test_the_keyboard_reaches_every_link_and_action_and_enter_runs_them(
    demo: tuple[str, EngineJob, list[list[str]]], browser: Browser
) -> None:
    from selenium.webdriver.common.keys import Keys

    url, _, _ = demo
    driver = browser.driver
    for path in ("/", f"/ui/topics/{CLUSTER}/StuckTopic", "/ui/topics"):
        driver.get(f"{url}{path}")
        reached = _focus_order(browser)
        visible = driver.execute_script(
            f"return [...document.querySelectorAll('{FOCUSABLE}')]"
            ".map((e, i) => e.offsetParent !== null ? i : -1).filter(i => i >= 0);"
        )
        assert reached == visible, path  # every one, in the page's order
    # Enter on a topic link opens it
    driver.get(f"{url}/ui/topics")
    link = driver.find_element("link text", "StuckTopic")
    link.send_keys(Keys.ENTER)
    wait_for(lambda: "/ui/topics/DefaultCluster/StuckTopic" in driver.current_url, 10, "the topic")


def test_actions_ask_for_the_token_once_per_tab(
    demo: tuple[str, EngineJob, list[list[str]]], browser: Browser
) -> None:
    from selenium.webdriver.common.keys import Keys

    url, _, _ = demo
    driver = browser.driver
    driver.get(f"{url}/")
    driver.execute_script("sessionStorage.clear();")
    first = driver.find_elements("css selector", "button[data-action='silence']")[0]
    target = first.get_attribute("data-alert")
    first.send_keys(Keys.ENTER)  # the keyboard runs it
    prompt = driver.switch_to.alert
    prompt.send_keys("8h")
    prompt.accept()
    wait_for(lambda: _dialog(browser), 5, "the token prompt")
    token = driver.switch_to.alert
    token.send_keys(TOKEN)
    token.accept()
    wait_for(lambda: _silenced(url, target), 10, "the silence through the API")
    wait_for(  # (the list is drawn again, the silence on it)
        lambda: driver.execute_script(
            "return !!document.querySelector(`[data-alert-id='${arguments[0]}'] .silenced`);",
            target,
        ),
        10,
        "the silence shown on the page",
    )
    # the same tab does not ask again
    ack = driver.find_elements("css selector", "button[data-action='ack']")[1]
    acked = ack.get_attribute("data-alert")
    ack.click()
    wait_for(lambda: _acked(url, acked), 10, "the acknowledgement")
    assert not _dialog(browser)

    # a remedy's dry run from the page, with the same token: the silenced alert's is refused
    # before anything is read of its cluster, and the page shows the sentence
    def shown(selector: str, alert_id: str) -> str:
        text: str = driver.execute_script(
            "const e = document.querySelector(`[data-alert-id='${arguments[1]}'] ${arguments[0]}`);"
            " return e && !e.hidden ? e.textContent : '';",
            selector,
            alert_id,
        )
        return text

    wait_for(lambda: bool(shown(".acked", acked)), 10, "the acknowledgement shown")
    dry = f"button[data-action='dry-run'][data-alert='{target}']"
    driver.find_element("css selector", dry).click()
    wait_for(lambda: "is silenced until" in shown("pre.remedy-run", target), 10, "the refusal")
    assert shown("pre.remedy-run", target).startswith("Dry run: refused — Alert ")
    assert not _dialog(browser)
    runs = httpx.get(f"{url}/remedies", params={"alert_id": target}, timeout=10).json()["data"]
    assert [(r["mode"], r["outcome"]) for r in runs] == [("dry_run", "refused")]
    assert "Plan" in driver.find_element("css selector", f"#alert-{target} details.plan").text


def _dialog(browser: Browser) -> bool:
    try:
        browser.driver.switch_to.alert  # noqa: B018
        return True
    except Exception:  # NoAlertPresentException
        return False


def _silenced(url: str, alert_id: str) -> bool:
    found = httpx.get(f"{url}/alerts/{alert_id}", timeout=10).json()
    return bool(found["silenced_by"])


def _acked(url: str, alert_id: str) -> bool:
    return httpx.get(f"{url}/alerts/{alert_id}", timeout=10).json()["acked_at"] is not None
