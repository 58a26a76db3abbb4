"""Google Drive: turn a file id into a direct download URL (large-file confirm flow).

``{base}/uc?export=download&id=<id>`` answers either with the file itself (small files)
or with an HTML page ("can't scan this file for viruses") holding a form whose hidden
``id``/``export``/``confirm``/``uuid`` fields build the real download URL. Older pages
carry a link with ``confirm=<token>`` instead, or set a ``download_warning`` cookie.
"""

from __future__ import annotations

import html
import http.client
import re
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser

from rexmle.sources.errors import DownloadError
from rexmle.sources.http import (
    MAX_PAGE_BYTES,
    RetryableError,
    RetryPolicy,
    call_with_retries,
    open_url,
)
from rexmle.sources.remote import GDRIVE_URL_ENV, base_url

_ID_IN_URL = (re.compile(r"/d/([A-Za-z0-9_-]{10,})"), re.compile(r"[?&]id=([A-Za-z0-9_-]{10,})"))


def file_id_of(value: str) -> str:
    """The Drive file id in a bare id or a Drive sharing/download URL.

    Raises:
        ValueError: no id can be found.
    """
    value = value.strip()
    if re.fullmatch(r"[A-Za-z0-9_-]{10,}", value):
        return value
    for pattern in _ID_IN_URL:
        match = pattern.search(value)
        if match:
            return match.group(1)
    msg = f"no Google Drive file id in {value!r}"
    raise ValueError(msg)


def first_url(file_id: str) -> str:
    """First URL of the flow (base from ``REXMLE_GDRIVE_URL``)."""
    query = urllib.parse.urlencode({"export": "download", "id": file_id})
    return f"{base_url(GDRIVE_URL_ENV)}/uc?{query}"


@dataclass
class _Form:
    action: str = ""
    fields: dict[str, str] = field(default_factory=dict)


class _ConfirmPageParser(HTMLParser):
    """Collects forms (action + hidden inputs) and links of a Drive warning page."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[_Form] = []
        self.links: list[str] = []
        self._in_form = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(_Form(action=values.get("action", "")))
            self._in_form = True
        elif tag == "input" and self._in_form and values.get("name"):
            self.forms[-1].fields[values["name"]] = values.get("value", "")
        elif tag == "a" and values.get("href"):
            self.links.append(values["href"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False


def confirm_url_from_page(page: str, page_url: str) -> str | None:
    """The download URL a Drive warning page points to, or None when it has none.

    Prefers a form carrying a ``confirm`` or ``uuid`` field (current flow), then a link
    whose query has ``confirm=`` (older flow).
    """
    parser = _ConfirmPageParser()
    parser.feed(page)
    for form in parser.forms:
        if "confirm" in form.fields or "uuid" in form.fields:
            action = urllib.parse.urljoin(page_url, html.unescape(form.action) or page_url)
            query = urllib.parse.urlencode(form.fields)
            joiner = "&" if urllib.parse.urlsplit(action).query else "?"
            return f"{action}{joiner}{query}"
    for href in parser.links:
        target = html.unescape(href)
        if "confirm=" in target:
            return urllib.parse.urljoin(page_url, target)
    return None


def resolve_download_url(
    file_id: str,
    *,
    context: str,
    policy: RetryPolicy,
    opener: urllib.request.OpenerDirector,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Follow the confirm flow and return the URL that serves the file's bytes.

    The same ``opener`` must be used for the download (it holds Drive's cookies).

    Raises:
        DownloadError: the first request fails after retries, or the page offers no
            download (quota exceeded, not shared, removed); the message quotes the page.
    """
    url = first_url(file_id_of(file_id))

    def attempt() -> str:
        with open_url(url, context=context, timeout_s=policy.timeout_s, opener=opener) as resp:
            landed = resp.geturl()
            if not resp.headers.get("Content-Type", "").lower().startswith("text/html"):
                return landed
            try:
                page = resp.read(MAX_PAGE_BYTES).decode("utf-8", "replace")
            except (OSError, http.client.HTTPException) as err:
                msg = f"{context}: reading {landed} failed: {err}"
                raise RetryableError(msg) from err
        confirmed = confirm_url_from_page(page, landed)
        if confirmed is not None:
            return confirmed
        token = _warning_cookie(opener)
        if token is not None:
            return _with_query(url, confirm=token)
        text = " ".join(re.sub(r"<[^>]+>", " ", page).split())[:240]
        msg = (
            f"{context}: Google Drive sent a page without a download link for file id "
            f"{file_id} (quota exceeded, not shared publicly, or removed); page says: {text!r}"
        )
        raise DownloadError(msg)

    return call_with_retries(attempt, policy=policy, sleep=sleep)


def _warning_cookie(opener: urllib.request.OpenerDirector) -> str | None:
    # CPython's OpenerDirector keeps its handlers in ``handlers``; typeshed does not list it
    handlers: list[urllib.request.BaseHandler] = opener.handlers  # type: ignore[attr-defined]
    for handler in handlers:
        if isinstance(handler, urllib.request.HTTPCookieProcessor):
            for cookie in handler.cookiejar:
                if cookie.name.startswith("download_warning") and cookie.value:
                    return cookie.value
    return None


def _with_query(url: str, **extra: str) -> str:
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query) + list(extra.items())
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))
