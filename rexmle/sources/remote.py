"""A downloadable file as a source describes it, and the base URLs of the sources."""

from __future__ import annotations

import os
from dataclasses import dataclass

ZENODO_URL_ENV = "REXMLE_ZENODO_URL"
FIGSHARE_URL_ENV = "REXMLE_FIGSHARE_URL"
GDRIVE_URL_ENV = "REXMLE_GDRIVE_URL"

DEFAULT_BASE_URLS = {
    ZENODO_URL_ENV: "https://zenodo.org",
    FIGSHARE_URL_ENV: "https://api.figshare.com",
    GDRIVE_URL_ENV: "https://drive.google.com",
}


def base_url(env_var: str) -> str:
    """Base URL of a source: the environment variable when set (a mirror or a test server),
    else the public service. Read at call time. No trailing slash.
    """
    value = os.environ.get(env_var) or DEFAULT_BASE_URLS[env_var]
    return value.rstrip("/")


@dataclass(frozen=True)
class RemoteFile:
    """One file to download, resolved from the task's `SourceFile` and the source's API."""

    name: str
    """Local file name (the task's ``SourceFile.name``)."""
    url: str
    """Download URL (for Google Drive: the first URL of the confirm flow)."""
    size_bytes: int | None = None
    """Size as published by the source, when it publishes one."""
    published_checksum: str | None = None
    """Checksum as published by the source (``md5:<hex>``), when it publishes one."""
    publisher: str = "the source"
    """Who published size and checksum, for messages (e.g. ``zenodo record 7812323``)."""
    source_licence: str | None = None
    """Licence string stated by the source's API."""
    needs_confirm: bool = False
    """Google Drive: resolve the confirm page just before downloading."""
