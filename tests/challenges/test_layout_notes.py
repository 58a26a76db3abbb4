"""Every family carries a layout note, and each fixture option the note names is real.

``LAYOUT.md`` (in the family folder) is where the next person checks a real download against
what prepare expects: the tree, the counts, the quirks, the third-party evidence and a command
to run. A note that says ``real_quirks=True`` writes a variant must belong to a family whose
fixture takes the option and writes something the plain fixture does not.
"""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path

import pytest

from rexmle.tasks.registry import all_tasks, family_folder, load_task

SECTIONS = ("## Tree", "## Counts", "## Quirks", "## Evidence", "## Check on a real download")
FAMILIES = sorted({spec.family for spec in all_tasks().values()})


def _note(family: str) -> str:
    return family_folder(family).joinpath("LAYOUT.md").read_text(encoding="utf-8")


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("family", FAMILIES)
def test_the_layout_note_has_every_section_in_order(family: str) -> None:
    note = _note(family)
    places = [
        next((i for i, line in enumerate(note.splitlines()) if line.startswith(s)), -1)
        for s in SECTIONS
    ]
    assert -1 not in places, f"{family}/LAYOUT.md lacks {SECTIONS[places.index(-1)]}"
    assert places == sorted(places), f"{family}/LAYOUT.md: sections out of order"
    evidence = note.split("## Evidence", 1)[1].split("## Check", 1)[0]
    assert evidence.count("\n- ") >= 1, f"{family}/LAYOUT.md: no evidence item"


@pytest.mark.parametrize("family", [f for f in FAMILIES if "real_quirks=True" in _note(f)])
def test_a_fixture_option_the_note_names_writes_what_the_plain_fixture_does_not(
    family: str, tmp_path: Path
) -> None:
    task = load_task(min(t for t, s in all_tasks().items() if s.family == family))
    task.make_fixture(tmp_path / "plain", seed=0)
    task.make_fixture(tmp_path / "quirks", seed=0, real_quirks=True)
    assert _tree(tmp_path / "quirks") != _tree(tmp_path / "plain")


def test_every_fixture_with_a_quirks_option_is_described_in_its_note() -> None:
    with_option = {
        family
        for family in FAMILIES
        if "real_quirks"
        in inspect.signature(
            load_task(
                min(t for t, s in all_tasks().items() if s.family == family)
            ).required_function("make_fixture")
        ).parameters
    }
    described = {family for family in FAMILIES if "real_quirks=True" in _note(family)}
    assert with_option == described
