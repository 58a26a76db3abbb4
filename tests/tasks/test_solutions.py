"""Winning-solution write-ups: every task has one with a well-formed source; bad files are refused."""

from __future__ import annotations

import pytest

from rexmle.errors import SpecError
from rexmle.tasks import solutions
from rexmle.tasks.solutions import parse_solutions

GOOD = """
family: toy
sources:
- {title: Toy challenge page, kind: challenge page, url: https://toy.grand-challenge.org/}
writeups:
- tasks: [toy-a, toy-b]
  team: Alpha
  rank: 1
  reported_score: Dice 0.9 on the hidden test set
  method: A 3D U-Net trained with five-fold cross-validation.
  sources:
  - {title: Alpha's paper, kind: team paper, doi: 10.1234/alpha.5}
"""


def test_an_entry_covers_each_task_it_lists_with_the_family_sources_after_its_own() -> None:
    found = parse_solutions(GOOD, "toy", "toy/solutions.yaml")
    assert sorted(found) == ["toy-a", "toy-b"]
    a = found["toy-a"]
    assert [s.title for s in a.sources] == ["Alpha's paper", "Toy challenge page"]
    assert a.sources[0].address == "https://doi.org/10.1234/alpha.5"


def test_an_unknown_field_is_refused_by_name() -> None:
    bad = GOOD.replace("  rank: 1\n", "  rank: 1\n  backbone: resnet\n")
    with pytest.raises(
        SpecError, match=r"(?s)toy/solutions\.yaml.*line 9: writeups\[0\]\.backbone: unknown field"
    ):
        parse_solutions(bad, "toy", "toy/solutions.yaml")


def test_an_entry_without_sources_is_refused() -> None:
    cut = GOOD.split("  sources:\n  - {title: Alpha")[0]
    with pytest.raises(SpecError, match=r"(?s)sources: required, missing"):
        parse_solutions(cut, "toy", "toy/solutions.yaml")
    empty = cut + "  sources: []\n"
    with pytest.raises(SpecError, match=r"(?s)sources.*at least 1"):
        parse_solutions(empty, "toy", "toy/solutions.yaml")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{title: Tee, kind: team paper}", "needs a doi or a url"),
        ("{title: Tee, kind: team paper, doi: 'https://doi.org/10.1/x'}", "must look like 10.NNNN"),
        ("{title: Tee, kind: team paper, url: 'github.com/x/y'}", "http\\(s\\) address"),
        ("{title: Tee, kind: blog, url: 'https://x.org/'}", "kind"),
    ],
)
def test_a_malformed_source_is_refused_with_its_reason(line, reason) -> None:
    bad = GOOD.replace("{title: Alpha's paper, kind: team paper, doi: 10.1234/alpha.5}", line)
    with pytest.raises(SpecError, match=f"(?s){reason}"):
        parse_solutions(bad, "toy", "toy/solutions.yaml")


def test_a_task_listed_twice_or_a_foreign_family_is_refused() -> None:
    twice = GOOD.replace("tasks: [toy-a, toy-b]", "tasks: [toy-a, toy-a]")
    with pytest.raises(SpecError, match=r"toy-a.*two write-ups"):
        parse_solutions(twice, "toy", "toy/solutions.yaml")
    with pytest.raises(SpecError, match="differs from its folder"):
        parse_solutions(GOOD, "other", "other/solutions.yaml")


def test_the_markdown_names_the_team_the_method_and_every_source() -> None:
    text = parse_solutions(GOOD, "toy", "toy/solutions.yaml")["toy-b"].render_markdown()
    assert text.startswith("## Winning solution of toy-b: Alpha, rank 1\n")
    assert "A 3D U-Net trained with five-fold cross-validation." in text
    assert "Dice 0.9 on the hidden test set" in text
    assert "https://doi.org/10.1234/alpha.5" in text
    assert "https://toy.grand-challenge.org/" in text


def test_a_family_without_a_file_has_none_and_a_broken_file_raises(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(solutions, "family_folder", lambda _family: tmp_path)
    solutions.family_solutions.cache_clear()
    try:
        assert solutions.solution_writeup_if_written("isles22") is None
        with pytest.raises(SpecError, match="no winning-solution write-ups"):
            solutions.solution_writeup("isles22")
        (tmp_path / "solutions.yaml").write_text("family: isles22\nwriteups: [", encoding="utf-8")
        with pytest.raises(SpecError, match="not valid YAML"):
            solutions.solution_writeup_if_written("isles22")
    finally:
        solutions.family_solutions.cache_clear()
