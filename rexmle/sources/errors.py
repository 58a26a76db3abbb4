"""Exception types raised while fetching a task's raw data."""

from __future__ import annotations

from rexmle.errors import RexmleError


class DownloadError(RexmleError):
    """Raw data could not be obtained: network, source, checksum, disk or archive problem."""


class HttpStatusError(DownloadError):
    """A server answered with an HTTP status that ends the download (404, 403, 410, ...)."""

    def __init__(self, message: str, *, status: int, url: str) -> None:
        super().__init__(message)
        self.status = status
        self.url = url


class ChecksumMismatchError(DownloadError):
    """A file's bytes do not match the checksum the source publishes or the task pins."""


class DiskSpaceError(DownloadError):
    """Not enough free disk space to download or extract."""

    def __init__(self, message: str, *, needed_bytes: int, available_bytes: int) -> None:
        super().__init__(message)
        self.needed_bytes = needed_bytes
        self.available_bytes = available_bytes


class UnsafeArchiveError(DownloadError):
    """An archive member would land outside the extraction folder, or is a device file."""


class ArchiveTooLarge(UnsafeArchiveError):
    """An archive unpacks to more bytes than its caller allows."""


class DamagedArchiveError(DownloadError):
    """An archive cannot be read to its end, or one of its members cannot be written."""
