"""Resolve files of a Zenodo record through its REST API (``GET /api/records/<id>``)."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from typing import Any

from rexmle.sources.errors import DownloadError
from rexmle.sources.http import RetryPolicy, get_json
from rexmle.sources.remote import ZENODO_URL_ENV, RemoteFile, base_url
from rexmle.tasks.spec import SourceSpec


def record_url(record: str) -> str:
    """API address of a record (base from ``REXMLE_ZENODO_URL``)."""
    return f"{base_url(ZENODO_URL_ENV)}/api/records/{record}"


def resolve_zenodo(
    source: SourceSpec,
    *,
    context: str,
    policy: RetryPolicy,
    opener: urllib.request.OpenerDirector | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, RemoteFile]:
    """Look up every file the task lists in the record's metadata.

    Reads ``files[]`` (``key``, ``size``, ``checksum`` as ``md5:<hex>``, ``links.self``); a
    record whose metadata does not inline its files is listed through
    ``/api/records/<id>/files`` (``entries[]``, ``links.content``).

    Returns:
        RemoteFile per task file name, with size, published md5 and download URL.

    Raises:
        DownloadError: the record cannot be read, or lacks a file the task lists (the
            message names the files the record has).
    """
    record = str(source.record)
    url = record_url(record)
    where = f"{context}, zenodo record {record}"
    metadata = get_json(url, policy=policy, context=where, opener=opener, sleep=sleep)
    if not isinstance(metadata, dict):
        msg = f"{where}: {url} returned {type(metadata).__name__}, expected a JSON object"
        raise DownloadError(msg)
    entries = metadata.get("files")
    if not isinstance(entries, list):
        listing = get_json(f"{url}/files", policy=policy, context=where, opener=opener, sleep=sleep)
        entries = listing.get("entries") if isinstance(listing, dict) else None
        if not isinstance(entries, list):
            msg = f"{where}: neither {url} nor {url}/files lists the record's files"
            raise DownloadError(msg)
    by_key = {_key_of(entry): entry for entry in entries if isinstance(entry, dict)}
    licence = _licence_of(metadata)
    publisher = f"zenodo record {record}"
    resolved: dict[str, RemoteFile] = {}
    missing: list[str] = []
    for file in source.files:
        entry = by_key.get(file.name)
        if entry is None:
            missing.append(file.name)
            continue
        links = entry.get("links") or {}
        download = links.get("self") or links.get("content") or links.get("download")
        if not download:
            msg = f"{where}: the record lists {file.name!r} without a download link"
            raise DownloadError(msg)
        resolved[file.name] = RemoteFile(
            name=file.name,
            url=download,
            size_bytes=_int_or_none(entry.get("size", entry.get("filesize"))),
            published_checksum=_md5_of(entry.get("checksum")),
            publisher=publisher,
            source_licence=licence,
        )
    if missing:
        msg = (
            f"{where}: the record has no file {missing}; it has {sorted(by_key)}. "
            "Check the file names in the task YAML."
        )
        raise DownloadError(msg)
    return resolved


def _key_of(entry: dict[str, Any]) -> str:
    return str(entry.get("key") or entry.get("filename") or "")


def _md5_of(value: object) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value if ":" in value else f"md5:{value}"


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _licence_of(metadata: dict[str, Any]) -> str | None:
    licence = (metadata.get("metadata") or {}).get("license")
    if isinstance(licence, dict):
        return str(licence.get("id") or licence.get("title") or "") or None
    if isinstance(licence, str):
        return licence
    return None
