"""Open a local page in headless Chromium through the DevTools protocol and report what happened:
console errors, uncaught exceptions, network requests, the page text, image sizes, a screenshot.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-extensions",
    "--window-size=1400,1000",
)
LOCAL_SCHEMES = ("file:", "data:", "about:", "chrome:", "devtools:")


def chromium_binary() -> str | None:
    """Debian's chromium (installed by .ci/run), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageVisit:
    """What one page load did."""

    console_errors: list[str] = field(default_factory=list)
    network_requests: list[str] = field(default_factory=list)
    """URLs requested that are not local (file:, data:, about:)."""
    text: str = ""
    images: list[dict[str, float]] = field(default_factory=list)
    screenshot_png: bytes = b""


class Chromium:
    """One headless Chromium with an empty profile; use as a context manager."""

    def __init__(self) -> None:
        binary = chromium_binary()
        if binary is None:
            msg = "chromium is not installed"
            raise RuntimeError(msg)
        self._profile = tempfile.mkdtemp(prefix="rexmle-chromium-")
        self._process = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile}",
             "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._ws_url = self._read_ws_url()
        import websocket

        self._ws = websocket.create_connection(self._ws_url, timeout=60)
        self._next_id = 0

    def _read_ws_url(self) -> str:
        assert self._process.stderr is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self._process.stderr.readline()
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                return found.group(1)
            if not line and self._process.poll() is not None:
                break
        msg = "chromium did not start its DevTools endpoint"
        raise RuntimeError(msg)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self._ws.close()
        self._process.terminate()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=20)
        shutil.rmtree(self._profile, ignore_errors=True)

    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self._next_id += 1
        message: dict[str, object] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._ws.send(json.dumps(message))
        return self._next_id

    def _call(
        self, method: str, params: dict | None = None, session: str | None = None,
        events: list[dict] | None = None,
    ) -> dict:  # fmt: skip
        wanted = self._send(method, params, session)
        while True:
            message = json.loads(self._ws.recv())
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if events is not None and "method" in message:
                events.append(message)

    def visit_and_evaluate(self, path: Path, expression: str, *, settle_s: float = 1.0) -> object:
        """Load ``path`` in a new tab, evaluate ``expression`` there and return its value."""
        target, session, events = self._open(path, settle_s)
        value = self._evaluate(session, expression, events)
        self._call("Target.closeTarget", {"targetId": target}, events=events)
        return value

    def _open(self, path: Path, settle_s: float) -> tuple[str, str, list[dict]]:
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        events: list[dict] = []
        for domain in ("Runtime", "Log", "Network", "Page"):
            self._call(f"{domain}.enable", session=session, events=events)
        self._call("Page.navigate", {"url": path.resolve().as_uri()}, session, events)
        deadline = time.monotonic() + 60
        while not any(e["method"] == "Page.loadEventFired" for e in events):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} did not load")
            events.append(json.loads(self._ws.recv()))
        settle_until = time.monotonic() + settle_s
        self._ws.settimeout(0.2)
        while time.monotonic() < settle_until:
            try:
                events.append(json.loads(self._ws.recv()))
            except Exception:  # websocket timeout: nothing more arrived
                continue
        self._ws.settimeout(60)
        return target, session, events

    def visit(self, path: Path, *, settle_s: float = 1.0, viewport_only: bool = False) -> PageVisit:
        """Load ``path`` (a local file) in a new tab and collect what happened; the screenshot
        is the whole page, or the first screen (1400 x 1000) with ``viewport_only``.
        """
        target, session, events = self._open(path, settle_s)
        visit = PageVisit()
        for event in events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                visit.console_errors.append(json.dumps(params.get("args"))[:300])
            elif method == "Runtime.exceptionThrown":
                visit.console_errors.append(json.dumps(params.get("exceptionDetails"))[:300])
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                visit.console_errors.append(params["entry"].get("text", "")[:300])
            elif method == "Network.requestWillBeSent":
                url = params["request"]["url"]
                if not url.startswith(LOCAL_SCHEMES):
                    visit.network_requests.append(url)
        visit.text = self._evaluate(session, "document.body.innerText", events)
        visit.images = self._evaluate(
            session,
            "Array.from(document.images).map(i => ({natural_width: i.naturalWidth, "
            "natural_height: i.naturalHeight, width: i.getBoundingClientRect().width, "
            "height: i.getBoundingClientRect().height, complete: i.complete ? 1 : 0}))",
            events,
        )
        shot = self._call(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": not viewport_only},
            session, events,
        )  # fmt: skip
        visit.screenshot_png = base64.b64decode(shot["data"])
        self._call("Target.closeTarget", {"targetId": target}, events=events)
        return visit

    def _evaluate(self, session: str, expression: str, events: list[dict]) -> object:
        result = self._call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session, events
        )
        return result["result"].get("value")
