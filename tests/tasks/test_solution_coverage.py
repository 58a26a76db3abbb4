"""Coverage of the shipped write-ups: 20/20 tasks, each with a well-formed source it renders."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from rexmle.tasks.registry import all_tasks
from rexmle.tasks.solutions import family_solutions, solution_writeup

DOI = re.compile(r"^10\.\d{4,9}/\S+$")
URL = re.compile(r"^https?://[A-Za-z0-9.-]+\.[A-Za-z]{2,}(/\S*)?$")


def _published_tasks() -> list[str]:
    return [t for t, spec in all_tasks().items() if spec.family != "toy"]


def test_twenty_of_twenty_tasks_have_a_write_up_with_a_well_formed_source() -> None:
    tasks = _published_tasks()
    assert len(tasks) == 20
    for task in tasks:
        writeup = solution_writeup(task)
        assert writeup.task == task
        assert writeup.team.strip()
        assert len(writeup.method.split()) >= 15, task
        assert writeup.sources, task
        for source in writeup.sources:
            assert (source.doi and DOI.match(source.doi)) or (source.url and URL.match(source.url))
            assert source.address.startswith(("https://", "http://"))


def test_the_family_files_list_only_tasks_of_their_family() -> None:
    families = {spec.family for spec in all_tasks().values() if spec.family != "toy"}
    for family in families:
        listed = set(family_solutions(family))
        declared = {t for t, spec in all_tasks().items() if spec.family == family}
        assert listed == declared, family


def test_every_published_write_up_renders_with_its_sources() -> None:
    for task in _published_tasks():
        writeup = solution_writeup(task)
        text = writeup.render_markdown()
        assert writeup.team in text
        for source in writeup.sources:
            assert source.address in text, (task, source.title)


def test_info_json_carries_the_write_up_with_its_sources(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "info", "ldct-iqa", "--json", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)["winning_solution"]
    expected = solution_writeup("ldct-iqa")
    assert shown["team"] == expected.team == "agaldran"
    assert shown["method"] == expected.method
    assert [s["address"] for s in shown["sources"]] == [s.address for s in expected.sources]
    assert "https://doi.org/10.1016/j.media.2024.103343" in [s["address"] for s in shown["sources"]]


def test_info_text_names_the_winner_and_every_source(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "info", "panther-task2", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "400"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "winning solution: MIC-DKFZ" in done.stdout
    writeup = solution_writeup("panther-task2")
    assert f"  method: {writeup.method}" in done.stdout  # the write-up itself, not only its sources
    for name in ("architecture", "preprocessing", "training", "ensembling", "not_established"):
        if getattr(writeup, name):
            assert getattr(writeup, name) in done.stdout, name
    for source in solution_writeup("panther-task2").sources:
        assert source.address in done.stdout
