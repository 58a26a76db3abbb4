"""Named definition sets: which definitions of the metrics and the ranking a grade uses.

- ``official``: the challenges' own definitions (at parity with the organisers' code), the default.
- ``study``: the definitions of the grading code behind the published ReX-MLE table (arXiv
  2512.17838; repository rajpurkarlab/ReX-MLE at commit 477c834), re-implemented from their
  description. A family declares where its study definitions differ in the ``functions.study``
  table of its YAML; a task that declares none grades the same under both sets, except for the
  study's rounding and medal rule, which apply to every task (:data:`STUDY_METRIC_DECIMALS`,
  :data:`STUDY_THRESHOLD_DECIMALS`). ``docs/study-errata.md`` lists every difference.
"""

from __future__ import annotations

from typing import Literal, get_args

from rexmle.errors import SpecError

DefinitionSet = Literal["official", "study"]
DEFINITION_SETS: tuple[DefinitionSet, ...] = get_args(DefinitionSet)
DEFAULT_DEFINITIONS: DefinitionSet = "official"

STUDY_METRIC_DECIMALS = 5
"""The study rounds every reported metric, mean position and percentile to 5 decimals."""
STUDY_THRESHOLD_DECIMALS = 2
"""The study's medal thresholds are the leaderboard rows' mean positions stored with 2 decimals."""
STUDY_SOURCE = "rajpurkarlab/ReX-MLE@477c834 (arXiv 2512.17838)"
ERRATA_DOC = "docs/study-errata.md"


def parse_definitions(name: str) -> DefinitionSet:
    """The definition set called ``name``.

    Raises:
        SpecError: no set has this name (the message lists the known sets).
    """
    if name not in DEFINITION_SETS:
        msg = f"unknown definition set {name!r}; known sets: {', '.join(DEFINITION_SETS)}"
        raise SpecError(msg)
    return name
