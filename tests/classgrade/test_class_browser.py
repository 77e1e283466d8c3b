"""report.html in a real browser: headless Chromium (Debian's package), driven over the
DevTools protocol on a pipe, with the network made unreachable. The page must draw its
plots, fetch nothing but its own file, and its links must lead to each student's feedback."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from .class_fixtures import graded_class  # noqa: F401 - the fixture

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class DevTools:
    """The DevTools protocol over ``--remote-debugging-pipe`` (fds 3 and 4, messages ending
    in NUL): no websocket library needed."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        # move the browser's ends above 10 so that placing them at 3 and 4 clobbers nothing
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w)]
        os.close(to_browser_r)
        os.close(from_browser_w)

        def place() -> None:
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--no-first-run",
             f"--user-data-dir={profile}", "--remote-debugging-pipe",
             # no network: every host unresolvable, every proxy dead
             "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
             "--window-size=1200,900", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=place, pass_fds=(3, 4))
        for fd in high:
            os.close(fd)
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from the browser")
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if ready:
                chunk = os.read(self.from_browser, 1 << 20)
                if not chunk:
                    raise EOFError("the browser closed its pipe")
                self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 30) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        while True:
            event = self._read_message(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)


@pytest.fixture
def browser(tmp_path):
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs Debian's package)")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    profile = tmp_path / "profile"
    profile.mkdir()
    tools = DevTools(CHROMIUM, profile)
    try:
        yield tools
    finally:
        tools.close()


PAGE_FACTS = """JSON.stringify({
  title: document.title,
  plots: [...document.querySelectorAll('svg.plot')].map(s => {
    const r = s.getBoundingClientRect();
    return {width: r.width, height: r.height, shapes: s.querySelectorAll('path,rect').length};
  }),
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  feedback: [...document.querySelectorAll('a.feedback')].map(a => a.textContent),
  scripts: document.scripts.length,
  images: document.images.length,
  textLength: document.body.innerText.length,
})"""


def _evaluate(tools: DevTools, session: str, expression: str) -> Any:
    result = tools.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                        session)
    return json.loads(result["result"]["value"])


def test_report_renders_plots_and_links_offline(graded_class, browser, tmp_path):  # noqa: F811
    report = graded_class.report / "report.html"
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"]
    browser.send("Network.enable", {}, session)
    browser.send("Page.enable", {}, session)
    browser.send("Page.navigate", {"url": report.as_uri()}, session)
    browser.wait_for("Page.loadEventFired")
    facts = _evaluate(browser, session, PAGE_FACTS)

    assert facts["title"].startswith("tinytrain: class report")
    assert len(facts["plots"]) == 4
    for plot in facts["plots"]:  # drawn, at a real size, with marks in them
        assert plot["width"] > 300 and plot["height"] > 100 and plot["shapes"] > 10
    assert facts["scripts"] == 0 and facts["images"] == 0
    assert sorted(facts["feedback"]) == sorted(r["file"] for r in graded_class.grades()[1:])
    for link in facts["links"]:
        parsed = urlparse(link)
        assert parsed.scheme == "file", link
        assert Path(unquote(parsed.path)).exists(), link

    requests = [e["params"]["request"]["url"] for e in browser.events
                if e.get("method") == "Network.requestWillBeSent"]
    assert requests and all(url.startswith("file://") for url in requests), requests

    shot = base64.b64decode(browser.send("Page.captureScreenshot", {"format": "png"}, session)[
        "data"])
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
    (tmp_path / "report.png").write_bytes(shot)

    # follow a student's link, as an instructor would
    browser.send("Runtime.evaluate", {"expression":
                 "document.querySelector(\"a.feedback[href*='/hang/']\").click()"}, session)
    browser.wait_for("Page.loadEventFired")
    page = _evaluate(browser, session, "JSON.stringify({title: document.title, "
                     "url: location.href, text: document.body.innerText})")
    assert page["url"].endswith("/students/hang/feedback.html")
    assert page["title"] == "Feedback: hang"
    assert "TIMEOUT" in page["text"] and "no answer within 5 s" in page["text"]


LAYOUT_FACTS = """(() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const over = el => el.scrollWidth > el.clientWidth + 1;
  const head = [...document.querySelectorAll('th')].find(t => t.textContent === 'time (s)');
  const wide = head.closest('.wide');
  const panes = [...document.querySelectorAll('table.panes')];
  return JSON.stringify({
    inner: window.innerWidth,
    page: document.documentElement.scrollWidth,
    body: document.body.getBoundingClientRect().right,
    widest: Math.max(...[...document.querySelectorAll('body *')].map(
      e => e.getBoundingClientRect().right)),
    pres: document.querySelectorAll('pre').length,
    cut: [...document.querySelectorAll('pre')].filter(over).map(p => p.textContent.slice(0, 60)),
    panes: panes.length,
    panesOut: panes.filter(t => t.getBoundingClientRect().right >
                                 t.parentElement.getBoundingClientRect().right + 1).length,
    timeRight: head.getBoundingClientRect().right,
    tableScrolls: over(wide),
  });
})()"""


@pytest.mark.parametrize("width", [1280, 1920])
def test_report_fits_the_window(graded_class, browser, width):  # noqa: F811
    """At a laptop's and a desktop's width, with every similarity pane opened: nothing of
    the page is wider than the window, no example or code box is cut (they wrap), the
    panes stay in their column, and the submissions table needs no scrolling to show its
    time column."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"]
    browser.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900,
                                                        "deviceScaleFactor": 1,
                                                        "mobile": False}, session)
    browser.send("Page.enable", {}, session)
    browser.send("Page.navigate", {"url": (graded_class.report / "report.html").as_uri()},
                 session)
    browser.wait_for("Page.loadEventFired")
    facts = _evaluate(browser, session, LAYOUT_FACTS)
    assert facts["inner"] == width
    assert facts["page"] <= width, facts
    assert facts["widest"] <= facts["body"] + 1, facts  # nothing sticks out of the page
    assert facts["pres"] > 5 and facts["cut"] == [], facts["cut"]
    assert facts["panes"] >= 1 and facts["panesOut"] == 0
    assert facts["timeRight"] <= width and not facts["tableScrolls"], facts
