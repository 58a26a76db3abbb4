"""The records a run leaves, as typed values that every layer above reads.

- :mod:`rexmle.records.runs`: ``run.json`` (:class:`~rexmle.records.runs.RunRecord`, its
  :class:`~rexmle.records.runs.RunConfig` and grade summary), where a run lives and whether it
  must run again; the runner is its one writer.
- :mod:`rexmle.records.results`: :class:`~rexmle.records.results.RunResult`, one run as a
  report or an analysis sees it (its record and its grade report read together).

This package imports no service (runner, report, analysis): they all import it.
"""
