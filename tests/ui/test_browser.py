"""``memframe ui`` in a real browser: Debian's headless Chromium, driven by Selenium through
Debian's chromedriver (no browser download), through list → search → open → edit → forget →
a team move blocked by a secret → a clean team move, and every other page. A screenshot of
each page is saved under the test's tmp dir; with ``MEMFRAME_UI_SCREENSHOTS=DIR`` they are
copied there too (``MEMFRAME_UI_SCREENSHOTS=docs/ui`` refreshes the docs' pictures).

Without Chromium, chromedriver or Selenium the test is skipped, except on CI (``CI`` set),
where ``./dev setup`` installs them and a missing one is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from memframe.memdir.index import indexed_files
from tests.ui.conftest import SECRET_FILE, SESSION_ID, UiProject

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WIDTH = 1280
# read at import: the suite's autouse fixture clears every MEMFRAME_* variable before a test runs
PUBLISH_TO = os.environ.get("MEMFRAME_UI_SCREENSHOTS")


def _missing() -> str | None:
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} is not installed (Debian package chromium)"
    if not CHROMEDRIVER.is_file():
        return f"{CHROMEDRIVER} is not installed (Debian package chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the dev extra)"
    return None


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    why = _missing()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"the browser test needs {why}")
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in a container
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-sync",
        "--disable-component-update",
        "--force-device-scale-factor=1",
        f"--window-size={WIDTH},900",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(argument)
    service = Service(str(CHROMEDRIVER), log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


class Shots:
    """Full-page screenshots, named in the order they were taken."""

    def __init__(self, driver: object, directory: Path) -> None:
        self.driver = driver
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.taken: list[Path] = []

    def take(self, name: str) -> Path:
        driver = self.driver
        height = driver.execute_script(  # type: ignore[attr-defined]
            "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"
        )
        driver.set_window_size(WIDTH, min(max(int(height) + 40, 600), 3000))  # type: ignore[attr-defined]
        path = self.directory / f"{name}.png"
        assert driver.save_screenshot(str(path))  # type: ignore[attr-defined]
        driver.set_window_size(WIDTH, 900)  # type: ignore[attr-defined]
        self.taken.append(path)
        return path

    def publish(self) -> None:
        if not PUBLISH_TO:
            return
        out = Path(PUBLISH_TO)
        out.mkdir(parents=True, exist_ok=True)
        for path in self.taken:
            shutil.copyfile(path, out / path.name)


def test_list_open_edit_forget_and_a_blocked_team_move(
    ui_project: UiProject, browser: object, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver = browser
    wait = WebDriverWait(driver, 15)  # type: ignore[arg-type]
    shots = Shots(driver, tmp_path / "screenshots")

    def texts(selector: str) -> list[str]:
        return [e.text for e in driver.find_elements(By.CSS_SELECTOR, selector)]  # type: ignore[attr-defined]

    def one(selector: str) -> object:
        return driver.find_element(By.CSS_SELECTOR, selector)  # type: ignore[attr-defined]

    def submit_and_wait(button: str, url_part: str) -> None:
        one(button).click()  # type: ignore[attr-defined]
        wait.until(ec.url_contains(url_part))

    # the printed URL: the token is exchanged for a cookie and leaves the address bar
    driver.get(ui_project.ui.url)  # type: ignore[attr-defined]
    wait.until(ec.url_contains("/memories"))
    assert "token=" not in driver.current_url  # type: ignore[attr-defined]
    names = texts("a.memory-link")
    assert "Never mock the database" in names
    assert "Deploy notes" in names
    assert "Release checklist" in names
    assert "40 d" in " ".join(texts("td.age"))  # the old memory, with its staleness mark
    assert texts("span.caveat")
    shots.take("memories")

    # recall search: the same BM25 the layers use, best match first
    search = one("#search")
    search.send_keys("database integration")  # type: ignore[attr-defined]
    search.submit()  # type: ignore[attr-defined]
    wait.until(ec.url_contains("q=database"))
    assert texts("a.memory-link")[0] == "Never mock the database"

    # open → edit
    driver.find_element(By.LINK_TEXT, "Never mock the database").click()  # type: ignore[attr-defined]
    wait.until(ec.url_contains("/memory/never-mock-the-database.md"))
    assert str(ui_project.path("never-mock-the-database.md")) in one("#path").text  # type: ignore[attr-defined]
    assert "scripts/test-postgres" in one("article.body").text  # type: ignore[attr-defined]
    shots.take("memory")
    description = one("input[name=description]")
    description.clear()  # type: ignore[attr-defined]
    description.send_keys("integration tests use a real PostgreSQL")  # type: ignore[attr-defined]
    body = one("textarea[name=body]")
    body.clear()  # type: ignore[attr-defined]
    body.send_keys("Integration tests use the real PostgreSQL of **scripts/test-postgres**.")  # type: ignore[attr-defined]
    submit_and_wait("#save", "done=saved")
    assert "Saved" in one("p.notice").text  # type: ignore[attr-defined]
    assert one("article.body strong").text == "scripts/test-postgres"  # type: ignore[attr-defined]
    saved = ui_project.store.find("never-mock-the-database.md")
    assert saved.description == "integration tests use a real PostgreSQL"
    assert saved.body == "Integration tests use the real PostgreSQL of **scripts/test-postgres**."
    line = indexed_files(ui_project.store.index_text())["never-mock-the-database.md"]
    assert "integration tests use a real PostgreSQL" in line

    # forget (the page asks first)
    driver.get(f"{ui_project.origin}/memory/old-port.md")  # type: ignore[attr-defined]
    one("#forget").click()  # type: ignore[attr-defined]
    wait.until(ec.alert_is_present())
    driver.switch_to.alert.accept()  # type: ignore[attr-defined]
    wait.until(ec.url_contains("forgotten=old-port.md"))
    assert "Forgot old-port.md" in one("p.notice").text  # type: ignore[attr-defined]
    assert "Dev server port" not in texts("a.memory-link")
    assert not ui_project.path("old-port.md").exists()
    assert "old-port.md" not in indexed_files(ui_project.store.index_text())

    # a move to team with a secret: refused, with the rule, and nothing moves
    driver.get(f"{ui_project.origin}/memory/{SECRET_FILE}")  # type: ignore[attr-defined]
    assert ui_project.secret_rule in texts("code.rule")
    one("#move-team").click()  # type: ignore[attr-defined]
    blocked = wait.until(ec.presence_of_element_located((By.ID, "blocked")))
    assert "Blocked by the secret gate" in blocked.text
    assert ui_project.secret_rule in blocked.text
    assert one("#scope").text == "private"  # type: ignore[attr-defined]
    assert ui_project.path(SECRET_FILE).is_file()
    assert not ui_project.path(f"team/{SECRET_FILE}").exists()
    shots.take("memory-blocked")

    # a clean memory moves to team
    driver.get(f"{ui_project.origin}/memory/never-mock-the-database.md")  # type: ignore[attr-defined]
    submit_and_wait("#move-team", "done=moved")
    assert one("#scope").text == "team"  # type: ignore[attr-defined]
    assert ui_project.path("team/never-mock-the-database.md").is_file()
    assert "team/never-mock-the-database.md" in indexed_files(ui_project.store.index_text())

    # the other pages
    driver.get(f"{ui_project.origin}/index")  # type: ignore[attr-defined]
    assert int(one("#loaded-lines").text) == len(texts("ol.index-lines li.loaded"))  # type: ignore[attr-defined]
    shots.take("memory-index")
    driver.get(f"{ui_project.origin}/sessions")  # type: ignore[attr-defined]
    assert SESSION_ID in texts("td a")
    shots.take("sessions")
    driver.find_element(By.LINK_TEXT, SESSION_ID).click()  # type: ignore[attr-defined]
    wait.until(ec.url_contains(f"/sessions/{SESSION_ID}"))
    assert "Add a web view of the memory" in one("#notes").text  # type: ignore[attr-defined]
    assert "<b>every</b>" in one("#notes").text  # type: ignore[attr-defined]  # shown as text
    shots.take("session")
    driver.get(f"{ui_project.origin}/docs")  # type: ignore[attr-defined]
    assert "Architecture" in one("main").text  # type: ignore[attr-defined]
    shots.take("magic-docs")
    driver.get(f"{ui_project.origin}/team")  # type: ignore[attr-defined]
    assert ui_project.secret_rule in texts("code.rule")
    shots.take("team-sync")
    driver.get(f"{ui_project.origin}/dream")  # type: ignore[attr-defined]
    assert "merged dev-server-port-2.md into old-port.md" in one("main").text  # type: ignore[attr-defined]
    shots.take("dream")

    # no script error, no blocked or failed load (the refused move's 422 is the one expected)
    logs = [
        e
        for e in driver.get_log("browser")  # type: ignore[attr-defined]
        if e.get("level") == "SEVERE" and "status of 422" not in e.get("message", "")
    ]
    assert not logs, logs
    for path in shots.taken:
        assert path.stat().st_size > 10_000, path
    shots.publish()
