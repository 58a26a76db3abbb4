"""Downloaders for a task's raw data: Zenodo, Figshare, Google Drive and plain URLs.

Files are streamed to ``.part`` files (resumed with HTTP Range), verified against the
checksum the source publishes and the one the task pins, renamed, then extracted safely
into ``raw/`` with a manifest. Entry points: `fetch_task_raw`, `download_task_files`.
"""

from rexmle.sources.errors import (
    ChecksumMismatchError,
    DiskSpaceError,
    DownloadError,
    HttpStatusError,
    UnsafeArchiveError,
)
from rexmle.sources.extract import safe_extract
from rexmle.sources.fetch import download_task_files, fetch_task_raw, task_raw_dir
from rexmle.sources.http import RetryPolicy
from rexmle.sources.manifest import SourceManifest, raw_problems, read_manifest

__all__ = [
    "ChecksumMismatchError",
    "DiskSpaceError",
    "DownloadError",
    "HttpStatusError",
    "RetryPolicy",
    "SourceManifest",
    "UnsafeArchiveError",
    "download_task_files",
    "fetch_task_raw",
    "raw_problems",
    "read_manifest",
    "safe_extract",
    "task_raw_dir",
]
