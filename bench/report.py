"""Time of the whole report for 3 agents × 20 tasks × 3 seeds: run-table, tables, bootstrap,
failure analysis, Markdown, JSON and the run browser (index + 180 run pages + SVG plots).

Run: ``.venv/bin/python bench/report.py`` (target: under 30 s on 2 cores). The run folders are
synthetic and seeded (run.json, grade.json with 20 per-case rows, 40 KiB of logs, overlays for
segmentation runs); their generation is not timed.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rexmle.grading.report import GradeReport
from rexmle.ranking import MedalThresholds, Ranking
from rexmle.report import collect_runs, write_report
from rexmle.report.overlays import MANIFEST, OVERLAY_DIR, overlay_png
from rexmle.tasks.registry import all_tasks

AGENTS = ("aide", "ml-master", "rd-agent")
SEEDS = 3


def _ranking(percentile: float) -> Ranking:
    """A place on a 10-row leaderboard with the given percentile (no medal)."""
    return Ranking(
        n_rows=10,
        positions={},
        mean_position=5.0,
        percentile=percentile,
        medal=None,
        above_median=False,
        any_medal=False,
        thresholds=MedalThresholds(gold=1.0, silver=2.0, bronze=3.0, above_median=5.5),
    )


def make_runs(root: Path, rng: np.random.Generator) -> int:
    """Write the synthetic run folders; returns their count."""
    count = 0
    gold = np.zeros((64, 64), dtype=np.uint8)
    gold[20:40, 24:44] = 1
    png = overlay_png(gold, np.roll(gold, 5, axis=0))
    for task_id, spec in all_tasks().items():
        for agent in AGENTS:
            for seed in range(SEEDS):
                folder = root / "paper" / task_id / agent / f"seed-{seed}"
                folder.mkdir(parents=True)
                roll = rng.random()
                status = "completed" if roll > 0.2 else ("agent_error" if roll > 0.1 else "timeout")
                record = {
                    "status": status,
                    "config": {"mini": False, "time_limit_s": 86400.0},
                    "sandbox": {"kind": "bwrap", "isolated": True},
                    "started_at": "2026-12-01T00:00:00+00:00",
                    "finished_at": "2026-12-02T00:00:00+00:00",
                    "timings_s": {"workspace": 3.0, "agent": 80000.0, "grade": 60.0},
                    "llm": {"total_tokens": int(rng.integers(1e5, 1e7)), "cost_usd": 12.5},
                }
                (folder / "run.json").write_text(json.dumps(record))
                (folder / "agent.stdout.log").write_text("step loss 0.1234\n" * 2400)
                (folder / "agent.stderr.log").write_text("warning: slow\n" * 1000)
                if status == "completed":
                    value = float(rng.random())
                    cases = [
                        {"case_id": f"case{i:03d}", spec.headline.key: float(rng.random())}
                        for i in range(20)
                    ]
                    grade = GradeReport(
                        task=task_id,
                        valid=True,
                        reasons=[],
                        metrics={spec.headline.key: value},
                        cases=cases,
                        ranking=_ranking(float(rng.random())),
                        data="full",
                        rexmle_version="bench",
                        seconds=60.0,
                    )
                    (folder / "grade.json").write_text(grade.model_dump_json())
                    (folder / "submission").mkdir()
                    (folder / "submission" / "submission.csv").write_text("case_id\n")
                    if spec.task_type == "segmentation":
                        overlays = folder / OVERLAY_DIR
                        overlays.mkdir()
                        items = []
                        for k, rank in enumerate(("best", "median", "worst")):
                            (overlays / f"{k:02d}-{rank}.png").write_bytes(png)
                            items.append(
                                {"file": f"{k:02d}-{rank}.png", "case_id": f"case{k:03d}",
                                 "rank": rank, "score_key": spec.headline.key, "score": 0.5,
                                 "view": "z = 10"}
                            )  # fmt: skip
                        (overlays / MANIFEST).write_text(json.dumps(items))
                count += 1
    return count


def main() -> None:
    """Build the runs, time the report, print the figures."""
    scratch = Path(tempfile.mkdtemp(prefix="rexmle-bench-report-"))
    try:
        runs = scratch / "runs"
        n = make_runs(runs, np.random.default_rng(0))
        started = time.perf_counter()
        results = collect_runs(runs)
        written = write_report(
            results,
            markdown=scratch / "report.md",
            json_path=scratch / "report.json",
            html_path=scratch / "site",
        )
        seconds = time.perf_counter() - started
        pages = len(list((scratch / "site" / "runs").rglob("*.html")))
        size_mb = sum(p.stat().st_size for p in written) / 1e6
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
        print(
            f"report of {n} runs ({len(AGENTS)} agents × {len(all_tasks())} tasks × {SEEDS} "
            f"seeds): {seconds:.2f} s; {pages} run pages, {len(written)} files, {size_mb:.1f} MB; "
            f"peak RSS {peak_mb:.0f} MB"
        )
        if seconds > 30:
            print("SLOWER than the 30 s target", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
