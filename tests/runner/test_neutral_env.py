"""The neutral copy of a virtual environment: nothing in it names a host path, the rest is the
venv's own files (hard links where the filesystem allows).
"""

from __future__ import annotations

import os
from pathlib import Path

from rexmle.runner.sandbox.neutral_env import (
    COPIES_PREFIX,
    copy_package,
    copy_venv,
    neutral_env,
    remove_stale_env_copies,
)


def make_venv(checkout: Path) -> Path:
    venv = checkout / ".venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "pkg" / "__pycache__").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("x = 1\n")
    (site / "pkg" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(
        b"\0" + str(site).encode()
    )
    (site / "__editable___rexmle_0_1_0_finder.py").write_text(
        f"MAPPING = {{'rexmle': '{checkout}'}}"
    )
    (site / "__editable__.rexmle-0.1.0.pth").write_text("import __editable___rexmle_0_1_0_finder\n")
    (site / "distutils-precedence.pth").write_text("import os\n")
    meta = site / "rexmle-0.1.0.dist-info"
    meta.mkdir()
    (meta / "direct_url.json").write_text(f'{{"url": "file://{checkout}"}}')
    (meta / "METADATA").write_text("Name: rexmle\n")
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to("/usr/bin/python3")
    (venv / "bin" / "pytest").write_text(f"#!{venv}/bin/python\nimport pytest\n")
    (venv / "bin" / "activate").write_text(f"VIRTUAL_ENV='{venv}'\n")
    (venv / "lib64").symlink_to(venv / "lib")  # absolute, inside the venv
    (venv / "outside").symlink_to(checkout / "rexmle")  # absolute, into the checkout
    (venv / "pyvenv.cfg").write_text(
        f"home = /usr/bin\nversion = 3.11.7\ncommand = /usr/bin/python3 -m venv {venv}\n"
    )
    return venv


def test_the_copy_names_no_host_path_and_keeps_the_rest(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    venv = make_venv(checkout)
    target = tmp_path / "neutral" / "venv"
    target.parent.mkdir()
    copy_venv(venv, target, (str(checkout), str(venv)))
    for folder, _, files in os.walk(target):
        for name in files:
            path = Path(folder) / name
            text = path.read_bytes() if not path.is_symlink() else os.readlink(path).encode()
            assert str(checkout).encode() not in text, path
    site = target / "lib" / "python3.11" / "site-packages"
    assert sorted(p.name for p in site.iterdir()) == [
        "distutils-precedence.pth", "pkg", "rexmle-0.1.0.dist-info",
    ]  # fmt: skip
    assert sorted(p.name for p in (site / "pkg").iterdir()) == ["__init__.py"]  # no bytecode
    assert sorted(p.name for p in (site / "rexmle-0.1.0.dist-info").iterdir()) == ["METADATA"]
    assert sorted(p.name for p in (target / "bin").iterdir()) == ["python"]
    assert os.readlink(target / "bin" / "python") == "/usr/bin/python3"
    assert os.readlink(target / "lib64") == "lib"  # made relative
    assert not (target / "outside").is_symlink()  # left out: it leads into the checkout
    assert (target / "pyvenv.cfg").read_text() == "home = /usr/bin\nversion = 3.11.7\n"
    original = venv / "lib" / "python3.11" / "site-packages" / "pkg" / "__init__.py"
    assert (site / "pkg" / "__init__.py").stat().st_ino == original.stat().st_ino  # a hard link


def test_the_package_copy_has_no_bytecode(tmp_path: Path) -> None:
    package = tmp_path / "rexmle"
    (package / "sub" / "__pycache__").mkdir(parents=True)
    (package / "sub" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"host path")
    (package / "sub" / "m.py").write_text("y = 2\n")
    copy_package(package, tmp_path / "copy")
    found = sorted(
        p.relative_to(tmp_path / "copy").as_posix() for p in (tmp_path / "copy").rglob("*")
    )
    assert found == ["sub", "sub/m.py"]


def test_copies_in_use_stay_and_those_of_a_killed_harness_go(tmp_path: Path) -> None:
    live = neutral_env()
    dead = tmp_path / f"{COPIES_PREFIX}dead"
    (dead / "venv").mkdir(parents=True)
    (dead / ".owner").touch()  # its owner died: nobody holds the lock
    assert remove_stale_env_copies(tmp_path) == [dead]
    assert not dead.exists()
    assert live.root not in remove_stale_env_copies()  # this process holds its claim
    assert live.shim.is_file()
    assert (live.package / "__init__.py").is_file()


def test_the_copy_is_readable_whatever_the_umask(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "checkout")
    previous = os.umask(0o077)
    try:
        copy_venv(venv, tmp_path / "copy", (str(tmp_path / "checkout"),))
    finally:
        os.umask(previous)
    assert (tmp_path / "copy").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "copy" / "lib" / "python3.11").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "copy" / "pyvenv.cfg").stat().st_mode & 0o777 == 0o644


def test_a_path_is_named_only_as_a_whole(tmp_path: Path) -> None:
    checkout = tmp_path / "w"
    venv = make_venv(checkout)
    meta = venv / "lib" / "python3.11" / "site-packages" / "rexmle-0.1.0.dist-info"
    (meta / "METADATA").write_text(f"Home-page: {checkout}ww/docs\n")  # another folder
    copy_venv(venv, tmp_path / "copy", (str(checkout),))
    kept = tmp_path / "copy" / "lib" / "python3.11" / "site-packages" / "rexmle-0.1.0.dist-info"
    assert sorted(p.name for p in kept.iterdir()) == ["METADATA"]
