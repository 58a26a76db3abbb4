"""The one path rule set: relative POSIX names inside a folder, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from rexmle.tasks.paths import (
    PathRules,
    is_inside,
    relative_path_problem,
    resolve_submission_path,
    shown_name,
)

STRICT = PathRules(max_depth=2, max_bytes=20, max_part_bytes=8)


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("", "empty"),
        ("a\x00b", "nul"),
        ("a\\b", "backslash"),
        ("/etc/passwd", "absolute"),
        ("C:/x", "absolute"),
        ("c:x", "absolute"),
        ("a/../b", "parent"),
        ("..", "parent"),
        ("abcdefghi", "too_long"),  # 9 bytes in one part, at most 8
        ("é" * 5, "too_long"),  # 5 characters but 10 bytes of UTF-8
        ("aaaa/bbbb/cccc/dddd/e", "too_long"),  # 21 bytes in all, at most 20
        ("a/b/c/d", "too_deep"),  # 3 folders, at most 2
    ],
)
def test_each_rule_by_hand(name: str, rule: str) -> None:
    problem = relative_path_problem(name, STRICT)
    assert problem is not None
    assert problem.rule == rule


@pytest.mark.parametrize("name", ["a/b/c", "./a", "a//b", "..b/c", "a/b..", "d/"])
def test_harmless_names_pass(name: str) -> None:
    assert relative_path_problem(name, STRICT) is None


def test_backslashes_may_be_separators_and_then_dotdot_is_seen() -> None:
    windows = PathRules(backslash_separates=True)
    assert relative_path_problem("a\\b.txt", windows) is None
    problem = relative_path_problem("..\\evil.txt", windows)
    assert problem is not None
    assert problem.rule == "parent"
    problem = relative_path_problem("C:\\evil.txt", windows)
    assert problem is not None
    assert problem.rule == "absolute"


def test_depth_and_length_messages_state_found_and_allowed() -> None:
    deep = relative_path_problem("a/b/c/d", STRICT)
    assert deep is not None
    assert deep.message == "is 3 folders deep (at most 2)"
    long = relative_path_problem("abcdefghi", STRICT)
    assert long is not None
    assert long.message == "has a name of 9 bytes or a part over 8 bytes (at most 20 in all)"


def test_is_inside_follows_links(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "up").symlink_to(tmp_path)
    assert is_inside(root, root / "d" / "missing.txt")
    assert is_inside(root, root)
    assert not is_inside(root, root / "up" / "x")
    assert not is_inside(root, tmp_path / "rootless")  # a sibling sharing the prefix


def test_long_names_are_cut_in_messages() -> None:
    assert shown_name("abc") == "'abc'"
    shown = shown_name("x" * 500)
    assert shown.endswith("... (500 characters)")
    assert len(shown) < 230


def test_a_cell_with_a_drive_letter_is_absolute(tmp_path: Path) -> None:
    (tmp_path / "C:").mkdir()
    (tmp_path / "C:" / "a.nii.gz").write_bytes(b"x")
    path, problem = resolve_submission_path(tmp_path, "C:/a.nii.gz")
    assert path is None
    assert problem == "path 'C:/a.nii.gz' is absolute; paths are relative to the submission folder"


def test_an_over_long_cell_says_which_limit(tmp_path: Path) -> None:
    path, problem = resolve_submission_path(tmp_path, "p" * 300 + ".nii.gz")
    assert path is None
    assert problem is not None
    assert "part over 255 bytes (at most 4096 in all)" in problem
    path, problem = resolve_submission_path(tmp_path, "a/" * 2100 + "b")
    assert path is None
    assert problem is not None
    assert "a name of 4201 bytes" in problem


def test_cells_keep_their_reasons(tmp_path: Path) -> None:
    (tmp_path / "ok.nii.gz").write_bytes(b"x")
    assert resolve_submission_path(tmp_path, "ok.nii.gz") == ((tmp_path / "ok.nii.gz"), None)
    cases = {
        "a\x00": "path 'a\\x00' contains a NUL character",
        " ok.nii.gz": "path ' ok.nii.gz' has leading or trailing spaces",
        "a\\b": "path 'a\\\\b' uses backslashes; write relative POSIX paths with '/'",
        "/ok.nii.gz": "path '/ok.nii.gz' is absolute; paths are relative to the submission folder",
        "../x": "path '../x' contains '..'; paths must stay inside the submission folder",
        "d/": "path 'd/' ends with '/'; name a file",
        "missing.nii.gz": "file 'missing.nii.gz' does not exist in the submission folder",
        "": "'' is not a regular file",
    }
    for cell, reason in cases.items():
        assert resolve_submission_path(tmp_path, cell) == (None, reason), cell
