"""Resolve files of a Figshare article through its API (``GET /v2/articles/<id>/versions/<v>``)."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from typing import Any

from rexmle.sources.errors import DownloadError
from rexmle.sources.http import RetryPolicy, get_json
from rexmle.sources.remote import FIGSHARE_URL_ENV, RemoteFile, base_url
from rexmle.tasks.spec import SourceSpec


def article_url(article: str, version: str | None) -> str:
    """API address of an article version (base from ``REXMLE_FIGSHARE_URL``)."""
    base = f"{base_url(FIGSHARE_URL_ENV)}/v2/articles/{article}"
    return f"{base}/versions/{version}" if version else base


def resolve_figshare(
    source: SourceSpec,
    *,
    context: str,
    policy: RetryPolicy,
    opener: urllib.request.OpenerDirector | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, RemoteFile]:
    """Match the task's files to the article's ``files[]``.

    A task file is matched by Figshare file id when its ``url`` is all digits, else by
    ``name``. A task file whose ``url`` is an ``http(s)`` address (e.g. the whole-article
    ``ndownloader`` zip) is downloaded from that address without an API checksum.

    Returns:
        RemoteFile per task file name, with the published size and ``computed_md5``.

    Raises:
        DownloadError: the article cannot be read, a file is missing or link-only.
    """
    article = str(source.record)
    publisher = f"figshare article {article}" + (
        f" version {source.version}" if source.version else ""
    )
    where = f"{context}, {publisher}"
    direct = [f for f in source.files if f.url and f.url.startswith(("http://", "https://"))]
    resolved = {
        f.name: RemoteFile(name=f.name, url=str(f.url), publisher=publisher) for f in direct
    }
    wanted = [f for f in source.files if f.name not in resolved]
    if not wanted:
        return resolved
    url = article_url(article, source.version)
    metadata = get_json(url, policy=policy, context=where, opener=opener, sleep=sleep)
    entries = metadata.get("files") if isinstance(metadata, dict) else None
    if not isinstance(entries, list):
        msg = f"{where}: {url} has no 'files' list"
        raise DownloadError(msg)
    licence = _licence_of(metadata)
    by_id = {str(e.get("id")): e for e in entries if isinstance(e, dict)}
    by_name = {str(e.get("name")): e for e in entries if isinstance(e, dict)}
    missing: list[str] = []
    for file in wanted:
        is_id = bool(file.url and file.url.isdigit())
        entry = by_id.get(str(file.url)) if is_id else by_name.get(file.name)
        if entry is None:
            missing.append(f"file id {file.url}" if is_id else file.name)
            continue
        if entry.get("is_link_only"):
            msg = f"{where}: {file.name!r} is a link-only entry ({entry.get('download_url')})"
            raise DownloadError(msg)
        md5 = entry.get("computed_md5") or entry.get("supplied_md5")
        size = entry.get("size")
        resolved[file.name] = RemoteFile(
            name=file.name,
            url=str(entry.get("download_url")),
            size_bytes=size if isinstance(size, int) else None,
            published_checksum=f"md5:{md5}" if md5 else None,
            publisher=publisher,
            source_licence=licence,
        )
    if missing:
        listing = sorted(f"{e.get('name')} (id {e.get('id')})" for e in by_id.values())
        msg = f"{where}: the article has no {missing}; it has {listing}"
        raise DownloadError(msg)
    return resolved


def _licence_of(metadata: dict[str, Any]) -> str | None:
    licence = metadata.get("license")
    if isinstance(licence, dict):
        return str(licence.get("name") or "") or None
    return None
