"""The texts a run's agent reads besides ReX-MLE's own: the study's, and a winning write-up.

After the workspace is built (:func:`rexmle.runner.workspace.build_workspace`),
:func:`prepare_run_texts` does what the run's config asks:

- ``solution_informed``: the task's winning-solution write-up with its sources is appended
  to ``instructions.md`` (every agent reads it; the LLM adapters compose their prompts from
  it) and written to ``.adapter/solution.md`` (appended to prompts built from the study's texts).
- ``prompts: study`` (llm agents): the study's texts are copied into ``.adapter/study/``
  (:func:`rexmle.agents.study_texts.place_study_texts`) with ``.adapter/study/score_usage.md``,
  how to run ``data/score.py``, which the adapters hand over as the study handed over its
  grading script. When the texts cannot be used the run goes on with ReX-MLE's texts, and the
  reason becomes the run's ``prompts-unavailable`` deviation.

What the adapters need goes into their config (:attr:`RunTexts.adapter_config`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rexmle.records.runs import RunConfig
from rexmle.runner.solution_writeups import (
    WriteupSource,
    render_writeup,
    source_lines,
    writeup_source,
)

SOLUTION_FILE = Path(".adapter") / "solution.md"
SCORE_USAGE_FILE = Path(".adapter") / "study" / "score_usage.md"


@dataclass(frozen=True)
class RunTexts:
    """What :func:`prepare_run_texts` placed."""

    study_files: dict[str, str] = field(default_factory=dict)
    """Study text name (``rules``, ``aide_notes``, ``description``, ``ml_master_prompt``) ->
    workspace-relative path; empty when the study's texts are not used."""
    study_commit: str | None = None
    texts_problem: str | None = None
    """Why the study's texts asked for could not be used (None: used, or not asked for)."""
    solution_sources: list[str] = field(default_factory=list)

    def adapter_config(self) -> dict[str, object]:
        """Entries of the adapter config: ``study_texts``, ``score_usage``, ``solution``."""
        return {
            "study_texts": dict(self.study_files) or None,
            "score_usage": SCORE_USAGE_FILE.as_posix() if self.study_files else None,
            "solution": SOLUTION_FILE.as_posix() if self.solution_sources else None,
        }


def prepare_run_texts(
    workspace_root: Path,
    instructions: Path,
    config: RunConfig,
    *,
    writeups: WriteupSource | None = None,
    cache_dir: Path | None = None,
) -> RunTexts:
    """Place the study's texts and the write-up the run asks for (see the module docstring).

    Raises:
        WriteupsUnavailable: a solution-informed run whose task has no usable write-up (the run
            is then an infra error: it must not run without what its condition promises).
    """
    sources: list[str] = []
    if config.solution_informed:
        source = writeups or writeup_source()
        writeup = source(config.task)
        section = render_writeup(config.task, writeup)
        with instructions.open("a", encoding="utf-8") as handle:
            handle.write(section)
        target = workspace_root / SOLUTION_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(section, encoding="utf-8")
        sources = source_lines(writeup)
    if config.prompts != "study" or config.agent.llm is None:
        return RunTexts(solution_sources=sources)
    from rexmle.agents.study_texts import PLACED_NAMES, STUDY_DIR, place_study_texts
    from rexmle.grading.pair_score import usage_text

    placement = place_study_texts(workspace_root, config.task, cache_dir=cache_dir)
    if not placement.placed:
        why = (placement.deviation or {}).get("why", "the study's texts are not available")
        return RunTexts(texts_problem=why, solution_sources=sources)
    (workspace_root / SCORE_USAGE_FILE).write_text(usage_text(config.task) + "\n", encoding="utf-8")
    files = {name: (STUDY_DIR / placed).as_posix() for name, placed in PLACED_NAMES.items()}
    return RunTexts(study_files=files, study_commit=placement.commit, solution_sources=sources)
