"""Fetching the study's prompt texts: pinned commit, SHA-256 per file, refused when they differ.

A local git repository stands in for the authors' repository (its files are made up here; the
real ones are never in this project), with pins computed from it.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rexmle.agents import study_texts
from rexmle.agents.study_texts import (
    StudyPins,
    StudyTextsError,
    fetch_study_texts,
    load_pins,
    place_study_texts,
    study_texts_problem,
)
from rexmle.cli import app
from rexmle.tasks.registry import all_tasks

TASKS = ("isles22", "dentex")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def standin(tmp_path: Path) -> tuple[Path, StudyPins]:
    """A git repository laid out like the study's, and pins of its HEAD commit."""
    repo = tmp_path / "standin"
    repo.mkdir()
    git(repo, "init", "-q")
    files = {
        "environment/instructions.txt": "stand-in rules\n",
        "agents/aide/additional_notes.txt": "stand-in notes ${TIME_LIMIT}\n",
    }
    for task in TASKS:
        files[f"rexmle/challenges/{task}/description.md"] = f"stand-in description of {task}\n"
        files[f"agents/ML-Master/dataset/full_instructions/{task}/full_instructions.txt"] = (
            f"stand-in ML-Master prompt of {task}: check at localhost:5001 (${{SERVER_URL}})\n"
        )
    for path, text in files.items():
        (repo / "rex-mle" / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / "rex-mle" / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "stand-in")

    def pin(path: str) -> dict[str, str]:
        return {"path": path, "sha256": hashlib.sha256(files[path].encode()).hexdigest()}

    pins = StudyPins.model_validate(
        {
            "repository": f"file://{repo}",
            "commit": git(repo, "rev-parse", "HEAD"),
            "folder": "rex-mle",
            "override_variable": "REXMLE_TEST_STUDY_SOURCE",
            "shared": {
                "rules": pin("environment/instructions.txt"),
                "aide_notes": pin("agents/aide/additional_notes.txt"),
            },
            "tasks": {
                task: {
                    "description": pin(f"rexmle/challenges/{task}/description.md"),
                    "ml_master_prompt": pin(
                        f"agents/ML-Master/dataset/full_instructions/{task}/full_instructions.txt"
                    ),
                }
                for task in TASKS
            },
        }
    )
    return repo, pins


def test_the_package_pins_every_task_and_holds_none_of_the_texts():
    pins = load_pins()
    assert sorted(pins.tasks) == sorted(all_tasks())
    assert sorted(pins.shared) == ["aide_notes", "rules"]
    assert len({f.sha256 for f in pins.files()}) == len(pins.files()) == 2 + 2 * len(all_tasks())
    assert pins.commit.startswith("477c834")
    package = Path(study_texts.__file__).resolve().parents[1]
    names = {Path(f.path).name for f in pins.files()}
    for path in package.rglob("*"):
        if path.name in names and "challenges" not in path.parts:
            pytest.fail(f"{path} looks like one of the study's texts")


def test_fetch_from_the_pinned_repository_url_verifies_and_caches(tmp_path):
    _, pins = standin(tmp_path)
    cache = tmp_path / "cache"
    result = fetch_study_texts(pins=pins, cache_dir=cache)
    assert result.fetched
    assert result.n_files == 6
    folder = cache / f"study-texts-{pins.commit[:12]}"
    assert result.folder == folder
    assert (folder / "environment/instructions.txt").read_text() == "stand-in rules\n"
    stamp = json.loads((folder / "fetched.json").read_text())
    assert stamp["commit"] == pins.commit
    assert len(stamp["files"]) == 6
    assert study_texts_problem(pins=pins, cache_dir=cache) is None
    again = fetch_study_texts(pins=pins, cache_dir=cache)
    assert again.fetched is False


def test_a_hash_mismatch_is_refused_and_nothing_is_written(tmp_path):
    repo, pins = standin(tmp_path)
    (repo / "rex-mle/rexmle/challenges/dentex/description.md").write_text("altered\n")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "altered")
    altered = pins.model_copy(update={"commit": git(repo, "rev-parse", "HEAD")})
    cache = tmp_path / "cache"
    with pytest.raises(StudyTextsError) as caught:
        fetch_study_texts(pins=altered, source=repo, cache_dir=cache)
    message = str(caught.value)
    assert "rex-mle/rexmle/challenges/dentex/description.md" in message
    assert hashlib.sha256(b"altered\n").hexdigest() in message
    assert pins.tasks["dentex"].description.sha256 in message
    assert "refused" in message
    assert not any(cache.glob("study-texts-*"))
    assert not any(cache.glob(".building-*"))


def test_an_unreachable_repository_says_how_to_fetch_offline(tmp_path, monkeypatch):
    _, pins = standin(tmp_path)
    gone = pins.model_copy(update={"repository": f"file://{tmp_path / 'nowhere'}"})
    monkeypatch.delenv("REXMLE_TEST_STUDY_SOURCE", raising=False)
    with pytest.raises(StudyTextsError, match=r"--source DIR .* REXMLE_TEST_STUDY_SOURCE"):
        fetch_study_texts(pins=gone, cache_dir=tmp_path / "cache")
    with pytest.raises(StudyTextsError, match="not a git repository"):
        fetch_study_texts(pins=gone, source=tmp_path, cache_dir=tmp_path / "cache")


def test_the_override_variable_names_a_local_mirror(tmp_path, monkeypatch):
    repo, pins = standin(tmp_path)
    mirror = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(repo), str(mirror)], check=True)
    gone = pins.model_copy(update={"repository": "https://example.invalid/none.git"})
    monkeypatch.setenv("REXMLE_TEST_STUDY_SOURCE", str(mirror))
    assert fetch_study_texts(pins=gone, cache_dir=tmp_path / "cache").source == str(mirror)


def test_placing_a_tasks_texts_or_recording_the_deviation(tmp_path):
    _, pins = standin(tmp_path)
    cache = tmp_path / "cache"
    workspace = tmp_path / "ws"
    missing = place_study_texts(workspace, "isles22", pins=pins, cache_dir=cache)
    assert missing.placed is False
    assert missing.deviation is not None
    assert "rexmle agents fetch-study-texts" in missing.deviation["why"]
    assert set(missing.deviation) == {"item", "study", "ours", "why"}
    assert not (workspace / ".adapter").exists()
    fetch_study_texts(pins=pins, cache_dir=cache)
    placed = place_study_texts(workspace, "isles22", pins=pins, cache_dir=cache)
    assert placed.placed
    assert placed.deviation is None
    assert sorted(placed.files) == [
        ".adapter/study/additional_notes.txt",
        ".adapter/study/description.md",
        ".adapter/study/instructions.txt",
        ".adapter/study/ml_master_full_instructions.txt",
    ]
    for relative, digest in placed.files.items():
        assert hashlib.sha256((workspace / relative).read_bytes()).hexdigest() == digest
    assert (workspace / ".adapter/study/description.md").read_text() == (
        "stand-in description of isles22\n"
    )
    cached = cache / f"study-texts-{pins.commit[:12]}" / pins.tasks["isles22"].description.path
    cached.write_text("edited after the fetch\n")
    edited = place_study_texts(tmp_path / "ws2", "isles22", pins=pins, cache_dir=cache)
    assert edited.placed is False
    assert "no longer matches its pin" in edited.deviation["why"]  # type: ignore[index]
    other = place_study_texts(tmp_path / "ws3", "usenhance", pins=pins, cache_dir=cache)
    assert "no texts for task 'usenhance'" in other.deviation["why"]  # type: ignore[index]


def test_the_cli_fetches_from_a_source(tmp_path, monkeypatch):
    repo, pins = standin(tmp_path)
    monkeypatch.setattr(study_texts, "load_pins", lambda: pins)
    monkeypatch.setenv("REXMLE_AGENTS_DIR", str(tmp_path / "agents"))
    runner = CliRunner()
    result = runner.invoke(app, ["agents", "fetch-study-texts", "--source", str(repo)])
    assert result.exit_code == 0, result.output
    assert re.search(r"fetched, 6 files verified by SHA-256", result.output)
    assert "already fetched" in runner.invoke(app, ["agents", "fetch-study-texts"]).output
    (repo / "rex-mle/environment/instructions.txt").write_text("x\n")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "x")
    moved = pins.model_copy(update={"commit": git(repo, "rev-parse", "HEAD")})
    monkeypatch.setattr(study_texts, "load_pins", lambda: moved)
    refused = runner.invoke(app, ["agents", "fetch-study-texts", "--source", str(repo)])
    assert refused.exit_code == 2
    assert "refused" in refused.output
