"""Checksums written with their algorithm as prefix (``md5:<hex>``, ``sha256:<hex>``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SUPPORTED_ALGORITHMS = ("md5", "sha1", "sha256")
"""Algorithms a checksum string may name."""

DEFAULT_ALGORITHMS = ("md5", "sha256")
"""Always computed for a download: Zenodo and Figshare publish md5, manifests keep sha256."""

_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class Checksum:
    """A parsed checksum: algorithm name and lower-case hex digest."""

    algorithm: str
    hexdigest: str

    def __str__(self) -> str:
        return f"{self.algorithm}:{self.hexdigest}"


def parse_checksum(text: str) -> Checksum:
    """Parse ``"<algorithm>:<hex>"``; a bare hex string is read as sha256 (pooch's convention).

    Raises:
        ValueError: unknown algorithm, or a digest that is not hex of the algorithm's length.
    """
    algorithm, sep, digest = text.strip().partition(":")
    if not sep:
        algorithm, digest = "sha256", text.strip()
    algorithm = algorithm.lower()
    digest = digest.lower()
    if algorithm not in SUPPORTED_ALGORITHMS:
        msg = f"checksum {text!r}: algorithm {algorithm!r} is not one of {SUPPORTED_ALGORITHMS}"
        raise ValueError(msg)
    expected_len = hashlib.new(algorithm).digest_size * 2
    if len(digest) != expected_len or any(c not in "0123456789abcdef" for c in digest):
        msg = (
            f"checksum {text!r}: a {algorithm} digest has {expected_len} hex digits, got {digest!r}"
        )
        raise ValueError(msg)
    return Checksum(algorithm, digest)


class MultiHasher:
    """Feed bytes once, get several digests (so a large file is read a single time)."""

    def __init__(self, algorithms: Iterable[str] = DEFAULT_ALGORITHMS) -> None:
        names = sorted(set(algorithms))
        unknown = [a for a in names if a not in SUPPORTED_ALGORITHMS]
        if unknown:
            msg = f"unsupported hash algorithms {unknown}; use {SUPPORTED_ALGORITHMS}"
            raise ValueError(msg)
        self._hashes = {name: hashlib.new(name) for name in names}
        self.n_bytes = 0

    def update(self, chunk: bytes) -> None:
        """Add bytes to every digest."""
        for h in self._hashes.values():
            h.update(chunk)
        self.n_bytes += len(chunk)

    def update_from_file(self, path: Path) -> None:
        """Add a file's whole content (used when resuming a partial download)."""
        with path.open("rb") as stream:
            while chunk := stream.read(_CHUNK_BYTES):
                self.update(chunk)

    def digests(self) -> dict[str, str]:
        """Hex digest per algorithm name."""
        return {name: h.hexdigest() for name, h in self._hashes.items()}


def file_digests(path: Path, algorithms: Iterable[str] = DEFAULT_ALGORITHMS) -> dict[str, str]:
    """Hex digests of a file's content, one pass for all algorithms."""
    hasher = MultiHasher(algorithms)
    hasher.update_from_file(path)
    return hasher.digests()


def algorithms_needed(checksums: Iterable[str | None]) -> tuple[str, ...]:
    """The default algorithms plus any algorithm named by the given checksum strings."""
    names = set(DEFAULT_ALGORITHMS)
    names.update(parse_checksum(c).algorithm for c in checksums if c)
    return tuple(sorted(names))


def checksum_problems(
    digests: dict[str, str],
    size_bytes: int,
    *,
    expected: dict[str, str | None],
    expected_size_bytes: dict[str, int | None],
    source: str,
) -> list[str]:
    """Every way a file differs from what is expected of it (empty when it matches).

    Args:
        digests: hex digest per algorithm of the bytes actually received.
        size_bytes: number of bytes actually received.
        expected: checksum string per origin (e.g. ``{"published by zenodo": "md5:..",
            "pinned in the task": None}``); None entries are skipped.
        expected_size_bytes: size per origin, None entries skipped.
        source: what the bytes are (file name and URL), for the messages.
    """
    problems: list[str] = []
    for origin, size in expected_size_bytes.items():
        if size is not None and size != size_bytes:
            problems.append(
                f"size of {source} does not match: expected {size} bytes ({origin}) "
                f"but got {size_bytes}"
            )
    for origin, text in expected.items():
        if not text:
            continue
        want = parse_checksum(text)
        got = digests.get(want.algorithm)
        if got is None:
            msg = f"no {want.algorithm} digest was computed for {source}"
            raise ValueError(msg)
        if got != want.hexdigest:
            problems.append(
                f"{want.algorithm.upper()} hash of {source} does not match: expected "
                f"{want} ({origin}) but got {want.algorithm}:{got}"
            )
    return problems
