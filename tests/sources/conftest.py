"""Fixtures for rexmle.sources tests: the fake source server and archive builders."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from source_server import SourceServer, build_zip

from rexmle.sources.remote import FIGSHARE_URL_ENV, GDRIVE_URL_ENV, ZENODO_URL_ENV


@pytest.fixture
def source_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[SourceServer]:
    """The fake source server, with the three base-URL variables pointing at it."""
    server = SourceServer()
    monkeypatch.setenv(ZENODO_URL_ENV, server.url)
    monkeypatch.setenv(FIGSHARE_URL_ENV, server.url)
    monkeypatch.setenv(GDRIVE_URL_ENV, server.url)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No network: base URLs point at a closed port and any socket connect fails the test."""
    for env in (ZENODO_URL_ENV, FIGSHARE_URL_ENV, GDRIVE_URL_ENV):
        monkeypatch.setenv(env, "http://127.0.0.1:9")

    def refuse(_self: socket.socket, address: object) -> None:
        pytest.fail(f"a test marked offline tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.fixture
def zip_builder(tmp_path: Path) -> Callable[[str, dict[str, bytes]], bytes]:
    """Build a zip under tmp_path/built/ and return its bytes."""
    folder = tmp_path / "built"
    folder.mkdir(exist_ok=True)

    def build(name: str, members: dict[str, bytes]) -> bytes:
        return build_zip(folder / name, members)

    return build
