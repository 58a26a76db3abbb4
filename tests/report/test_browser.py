"""The run browser opened in headless Chromium (Debian's `chromium`, installed by .ci/run): no
console errors, no network requests, the table text, the MINI banner, overlays rendered.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from headless import Chromium, chromium_binary
from PIL import Image

from rexmle.grading import grade_submission
from rexmle.grading.grader import write_report
from rexmle.report.overlays import write_overlays

pytestmark = pytest.mark.skipif(
    chromium_binary() is None, reason="chromium is not installed (.ci/run installs it with apt)"
)


def _run_folder(runs: Path, agent: str, seed: int, record: dict) -> Path:
    folder = runs / "paper" / "isles22" / agent / f"seed-{seed}"
    folder.mkdir(parents=True)
    base = {
        "config": {"mini": True, "time_limit_s": 60.0},
        "sandbox": {"kind": "bwrap", "isolated": True},
        "started_at": "2026-12-01T10:00:00+00:00",
        "finished_at": "2026-12-01T10:01:00+00:00",
        "timings_s": {"workspace": 1.0, "agent": 50.0, "grade": 5.0, "total": 56.0},
    }
    (folder / "run.json").write_text(json.dumps({**base, **record}))
    return folder


@pytest.fixture(scope="module")
def browser_dir(prepared_mini, tmp_path_factory) -> Path:
    dirs = prepared_mini("isles22")
    root = tmp_path_factory.mktemp("browser")
    runs = root / "runs"
    oracle = _run_folder(runs, "oracle", 0, {"status": "completed", "validation_requests": 3})
    shutil.copytree(dirs.gold, oracle / "submission")
    report = grade_submission(
        "isles22", oracle / "submission", data_dir=dirs.root.parent, workers=1
    )
    write_report(report, oracle / "grade.json")
    assert write_overlays("isles22", oracle / "submission", dirs.gold, oracle)
    (oracle / "agent.stdout.log").write_text(
        "".join(f"epoch {i} loss {1 / (i + 1):.3f}\n" for i in range(50))
    )
    (oracle / "llm_usage.jsonl").write_text(
        json.dumps({"model": "gw/gpt-5", "prompt_tokens": 1200, "completion_tokens": 300}) + "\n"
    )
    (oracle / "llm_trajectory.jsonl").write_text(
        json.dumps({"time": "2026-12-01T10:00:05", "alias": "gw/gpt-5", "status": "ok",
                    "request": {"messages": [{"role": "user", "content": "train a U-Net"}]},
                    "response": "use nnU-Net <b>now</b>"}) + "\n"
    )  # fmt: skip
    (oracle / "agent_output").mkdir()
    (oracle / "agent_output" / "best_solution.py").write_text("print('the best model')\n")
    (oracle / "agent_output" / "submissions.jsonl").write_text(
        json.dumps({"offered": 1, "valid": True, "note": "step 4"}) + "\n"
    )
    crash = _run_folder(
        runs, "crasher", 0, {"status": "agent_error", "error": "the agent exited with code 1"}
    )
    (crash / "agent.stderr.log").write_text("Traceback\n<script>alert(1)</script>\nMemoryError\n")
    out = root / "site"
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "report", str(runs), "--html", f"{out}/"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def _not_blank(png: bytes) -> bool:
    with Image.open(io.BytesIO(png)) as image:
        pixels = np.asarray(image.convert("L"), dtype=float)
    return pixels.shape[0] > 100 and pixels.std() > 5


def test_index_page_opens_offline_with_tables_and_banner(browser_dir: Path) -> None:
    with Chromium() as chromium:
        visit = chromium.visit(browser_dir / "index.html")
    assert visit.console_errors == []
    assert visit.network_requests == []
    assert "MINI DATA" in visit.text
    assert "Overall mean percentile" in visit.text
    assert "isles22" in visit.text
    assert "crash: out_of_memory" in visit.text  # the failure class of the crashed run
    assert _not_blank(visit.screenshot_png)
    assert (browser_dir / "plots" / "paper-mini-percentile-heatmap.svg").is_file()


def test_run_page_shows_overlays_logs_and_llm_usage(browser_dir: Path) -> None:
    page = browser_dir / "runs" / "paper" / "isles22" / "oracle" / "seed-0.html"
    crash_page = browser_dir / "runs" / "paper" / "isles22" / "crasher" / "seed-0.html"
    with Chromium() as chromium:
        visit = chromium.visit(page)
        crash = chromium.visit(crash_page)
    assert visit.console_errors == []
    assert crash.console_errors == []
    assert visit.network_requests == []
    assert crash.network_requests == []
    assert "MINI DATA" in visit.text
    assert "epoch 49 loss" in visit.text
    assert "gw/gpt-5" in visit.text
    assert "agent_output/best_solution.py" in visit.text
    assert "the best model" in visit.text
    assert "step 4" in visit.text  # the adapter's submissions.jsonl
    assert "Trajectory (1 calls)" in visit.text
    assert "gw/gpt-5 · ok" in visit.text
    source = page.read_text()
    assert "[user] train a U-Net" in source
    assert "use nnU-Net &lt;b&gt;now&lt;/b&gt;" in source
    assert "sub-strokecase0002" in visit.text  # the per-case scores table
    assert visit.images, "no overlay images on the page"
    for image in visit.images:
        assert image["complete"] == 1
        assert image["natural_width"] > 0
        assert image["width"] > 0
        assert image["natural_height"] > 0
        assert image["height"] > 0
    assert _not_blank(visit.screenshot_png)
    # the agent's stderr is shown as text, never run as markup
    assert "<script>alert(1)</script>" in crash.text
    assert "MemoryError" in crash.text
