"""The run browser opened in headless Chromium (Debian's `chromium`, installed by .ci/run): no
console errors, no network requests, the tables, the MINI banner, overlays showing the image,
the transcript by role with tool calls, AIDE's journal, a 10-agent leaderboard that fits.

With ``REXMLE_SCREENSHOTS=DIR`` set, the screenshots of the README (index, a segmentation run,
a detection run, an AIDE run) are written to DIR.
"""

from __future__ import annotations

import io
import json
import os
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
from rexmle.io import read_image, write_image
from rexmle.llm.metering import RunEntry, RunMeter, UsageLine
from rexmle.report.overlays import write_overlays
from tests.grade_reports import grade_report_json
from tests.run_records import write_run_json

pytestmark = pytest.mark.skipif(
    chromium_binary() is None, reason="chromium is not installed (.ci/run installs it with apt)"
)
SCREENSHOTS = os.environ.get("REXMLE_SCREENSHOTS")


def _run_folder(runs: Path, task: str, agent: str, seed: int, record: dict) -> Path:
    folder = runs / "paper" / task / agent / f"seed-{seed}"
    folder.mkdir(parents=True)
    base = {
        "config": {
            "mini": True,
            "time_limit_s": 3600.0,
            "agent": {"id": agent, "kind": "command", "command": "python train.py"},
        },
        "sandbox": {"kind": "bwrap", "isolated": True},
        "started_at": "2026-12-01T10:00:00+00:00",
        "finished_at": "2026-12-01T10:41:00+00:00",
        "timings_s": {"workspace": 3.0, "agent": 2400.0, "grade": 57.0, "total": 2460.0},
    }
    write_run_json(folder, {**base, **record})
    return folder


def _graded_copy(dirs, folder: Path, task: str, flip: bool = False) -> None:
    shutil.copytree(dirs.gold, folder / "submission")
    if flip:  # the "axes flipped" failure: a valid file on the wrong side of the image
        for mask in sorted((folder / "submission" / "predictions").glob("*.nii.gz")):
            image = read_image(mask)
            write_image(mask, np.flip(image.array, axis=0).copy(), like=image.geometry)
    report = grade_submission(task, folder / "submission", data_dir=dirs.root.parent, workers=1)
    write_report(report, folder / "grade.json")
    assert write_overlays(task, folder / "submission", dirs.gold, folder)


def _llm_calls(folder: Path) -> None:
    """A gateway run folder: the usage log and trajectory written by the gateway's own meter."""
    meter = RunMeter(
        RunEntry(
            run_id="r1",
            usage_path=str(folder / "llm_usage.jsonl"),
            trajectory_path=str(folder / "llm_trajectory.jsonl"),
            stop_path=str(folder / "llm_stop"),
            budget_usd=None,
            max_calls_per_minute=None,
            trajectory_max_bytes=1 << 20,
        ),
        secrets=[],
    )
    system = {"role": "system", "content": "You are a Kaggle grandmaster. Use the tools."}
    user = {"role": "user", "content": "Segment the stroke lesions in data/test. <b>now</b>"}
    tool_call = {
        "id": "call_1",
        "type": "function",
        "function": {
            "name": "run_python",
            "arguments": json.dumps({"code": "import nibabel as nib\nfor case in cases:\n    "
                                     "train(case)  # one epoch\nprint('done')\n"}),
        },
    }  # fmt: skip
    first = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
    result = {"role": "tool", "tool_call_id": "call_1", "content": "epoch 1 loss 0.41\ndone"}
    answer = "The model trained. Final script:\n```python\ndef predict(x):\n    return x > 0.5\n```"
    calls = [
        ([system, user], {"choices": [{"message": first}]}, 1200, 80, 2.4),
        (
            [system, user, first, result],
            {"choices": [{"message": {"role": "assistant", "content": answer}}]},
            1500,
            220,
            3.1,
        ),
    ]
    for number, (messages, response, tokens_in, tokens_out, latency) in enumerate(calls):
        line = UsageLine(
            time=f"2026-12-01T10:0{number}:05+00:00",
            alias="gw/gpt-5",
            upstream_model="openai/gpt-5",
            status="ok",
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=tokens_in * 1.25e-6 + tokens_out * 1e-5,
            latency_s=latency,
        )
        trajectory = {
            "time": line.time,
            "alias": line.alias,
            "status": line.status,
            "request": {"messages": messages, "params": {"temperature": 0.5}},
            "response": response,
            "error": None,
        }
        meter.record(line, trajectory)


def _aide_output(folder: Path) -> None:
    logs = folder / "agent_output" / "logs"
    logs.mkdir(parents=True)
    nodes = [
        {"id": "a", "step": 0, "plan": "Baseline: threshold the DWI", "code": "x = 1\n",
         "metric": {"value": 0.31, "maximize": True}, "is_buggy": False, "exec_time": 12.5,
         "analysis": "works"},
        {"id": "b", "step": 1, "plan": "Add a 3-D U-Net", "code": "import torch\n",
         "metric": {"value": None}, "is_buggy": True, "exec_time": 3.0, "analysis": "CUDA OOM"},
        {"id": "c", "step": 2, "plan": "Smaller U-Net, patches", "code": "patch = 64\n",
         "metric": {"value": 0.52, "maximize": True}, "is_buggy": False, "exec_time": 840.0},
    ]  # fmt: skip
    (logs / "journal.json").write_text(
        json.dumps({"nodes": nodes, "node2parent": {"b": "a", "c": "b"}, "__version": "2"})
    )
    (logs / "tree_plot.html").write_text("<html><body>AIDE tree</body></html>")
    (logs / "best_solution.py").write_text("patch = 64\nprint('the best model')\n")


@pytest.fixture(scope="module")
def browser_dir(prepared_mini, tmp_path_factory) -> Path:
    isles = prepared_mini("isles22")
    dentex = prepared_mini("dentex")
    root = tmp_path_factory.mktemp("browser")
    runs = root / "runs"
    oracle = _run_folder(runs, "isles22", "oracle", 0, {"status": "completed",
                                                         "validation_requests": 3})  # fmt: skip
    _graded_copy(isles, oracle, "isles22")
    (oracle / "agent.stdout.log").write_text(
        "".join(f"epoch {i} loss {1 / (i + 1):.3f}\n" for i in range(50))
    )
    (oracle / "workspace").mkdir()
    (oracle / "workspace" / "validate.py").write_text("# the harness's upload helper\n")
    (oracle / "workspace" / "train.py").write_text("def train():\n    return 'the trained model'\n")
    flipped = _run_folder(runs, "isles22", "flipper", 0, {"status": "completed"})
    _graded_copy(isles, flipped, "isles22", flip=True)
    boxes = _run_folder(runs, "dentex", "oracle", 0, {"status": "completed"})
    _graded_copy(dentex, boxes, "dentex")
    aide = _run_folder(
        runs, "isles22", "aide", 0,
        {"status": "completed", "config": {"mini": True, "time_limit_s": 3600.0,
                                           "agent": {"id": "aide", "kind": "llm", "llm": {
                                               "adapter": "aide", "environment": "aide",
                                               "models": {"code": "gpt-5"}}}},
         "llm": {"calls": 2, "tokens_in": 2700, "tokens_out": 300, "cost_usd": 0.0064}},
    )  # fmt: skip
    _graded_copy(isles, aide, "isles22")
    _llm_calls(aide)
    _aide_output(aide)
    crash = _run_folder(
        runs, "isles22", "crasher", 0, {"status": "agent_error", "error": "exited with code 1"}
    )
    (crash / "agent.stderr.log").write_text("Traceback\n<script>alert(1)</script>\nMemoryError\n")
    out = root / "site"
    done = subprocess.run(
        [sys.executable, "-m", "rexmle.cli", "report", str(runs), "--html", f"{out}/"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "REXMLE_DATA_DIR": str(isles.root.parent)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def _pixels(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"))


def _not_blank(png: bytes) -> bool:
    pixels = _pixels(png).mean(axis=2)
    return pixels.shape[0] > 100 and pixels.std() > 5


def _save(name: str, png: bytes, *, top: int = 0, height: int = 1300) -> None:
    """Keep ``height`` pixels of a screenshot from ``top`` for the README
    (``REXMLE_SCREENSHOTS``), as a palette PNG.
    """
    if not SCREENSHOTS:
        return
    target = Path(SCREENSHOTS)
    target.mkdir(parents=True, exist_ok=True)
    with Image.open(io.BytesIO(png)) as image:
        small = image.convert("RGB")
        small = small.crop((0, top, small.width, min(small.height, top + height)))
        palette = small.quantize(
            colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
        palette.save(target / name, optimize=True)


def _page(browser_dir: Path, task: str, agent: str) -> Path:
    return browser_dir / "runs" / "paper" / task / agent / "seed-0.html"


def test_index_page_opens_offline_with_tables_and_banner(browser_dir: Path) -> None:
    with Chromium() as chromium:
        visit = chromium.visit(browser_dir / "index.html", viewport_only=True)
    assert visit.console_errors == []
    assert visit.network_requests == []
    assert "MINI DATA" in visit.text
    assert "Overall mean percentile" in visit.text
    assert "isles22" in visit.text
    assert "crash: out_of_memory" in visit.text  # the failure class of the crashed run
    assert "flipped" in visit.text  # the geometry diagnosis, with $REXMLE_DATA_DIR as data dir
    assert _not_blank(visit.screenshot_png)
    _save("browser-index.png", visit.screenshot_png)
    assert (browser_dir / "plots" / "paper-mini-percentile-heatmap.svg").is_file()


def test_segmentation_run_page_shows_the_image_under_the_outlines(browser_dir: Path) -> None:
    page = _page(browser_dir, "isles22", "oracle")
    crash_page = _page(browser_dir, "isles22", "crasher")
    with Chromium() as chromium:
        visit = chromium.visit(page)
        figure = chromium.visit_and_evaluate(
            page,
            "(() => {const i = document.querySelector('figure.overlay img:not([hidden])');"
            "const r = i.getBoundingClientRect();"
            "return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height,"
            " buttons: document.querySelectorAll('figure.overlay .slices button').length};})()",
        )
        crash = chromium.visit(crash_page)
    assert visit.console_errors == []
    assert crash.console_errors == []
    assert visit.network_requests == []
    assert crash.network_requests == []
    assert "MINI DATA" in visit.text
    assert "epoch 49 loss" in visit.text
    assert "workspace/train.py" in visit.text  # the agent's code ...
    assert "validate.py" not in visit.text  # ... not the harness's upload helper
    assert "best case sub-strokecase" in visit.text
    assert "DWI, 0.5th–99.5th percentile" in visit.text
    assert "sub-strokecase0002" in visit.text  # the per-case scores table
    assert "8.64e+04" not in visit.text
    assert "40 min 00 s" in visit.text  # the agent's time, for people
    assert visit.images, "no overlay images on the page"
    for image in visit.images:
        assert image["complete"] == 1
        assert image["natural_width"] > 0
    # the overlay panel as the browser drew it: the DWI's texture under the outlines
    shot = _pixels(visit.screenshot_png).astype(int)
    x, y = round(figure["x"]), round(figure["y"])
    panel = shot[y : y + round(figure["h"]), x : x + round(figure["w"] / 3) - 4]
    grey = (panel[:, :, 0] == panel[:, :, 1]) & (panel[:, :, 1] == panel[:, :, 2])
    assert grey.sum() > 1000
    assert panel[:, :, 0][grey].std() > 10  # not a flat background
    assert figure["buttons"] >= 2  # a choice of slices
    assert _not_blank(visit.screenshot_png)
    # the agent's stderr is shown as text, never run as markup
    assert "<script>alert(1)</script>" in crash.text
    assert "MemoryError" in crash.text


def test_a_flip_is_shown_on_the_run_page(browser_dir: Path) -> None:
    with Chromium() as chromium:
        visit = chromium.visit(_page(browser_dir, "isles22", "flipper"))
    assert "GEOMETRY: flipped" in visit.text
    assert "largest disagreement" in visit.text
    _save("browser-segmentation-run.png", visit.screenshot_png)


def test_detection_run_page_has_boxes_on_the_radiograph(browser_dir: Path) -> None:
    with Chromium() as chromium:
        visit = chromium.visit(_page(browser_dir, "dentex", "oracle"))
    assert visit.console_errors == []
    assert visit.network_requests == []
    assert "case case" not in visit.text
    assert "( = n/a)" not in visit.text
    assert "first case train_" in visit.text
    assert "panoramic X-ray" in visit.text
    assert _not_blank(visit.screenshot_png)
    _save("browser-detection-run.png", visit.screenshot_png)


def test_transcript_shows_roles_tool_calls_and_usage(browser_dir: Path) -> None:
    page = _page(browser_dir, "isles22", "aide")
    with Chromium() as chromium:
        dom = chromium.visit_and_evaluate(
            page,
            "(() => {document.getElementById('transcript-all').click();"
            "const calls = document.querySelectorAll('details.call');"
            "const roles = Array.from(document.querySelectorAll('details.call .msg'))"
            ".map(m => m.dataset.role);"
            "const tool = document.querySelector('.toolcall');"
            "const box = document.getElementById('transcript-search');"
            "box.value = 'predict(x)'; box.dispatchEvent(new Event('input'));"
            "const shown = Array.from(calls).filter(c => c.style.display !== 'none').length;"
            "return {calls: calls.length, roles, tool: tool && tool.dataset.tool,"
            " toolText: tool && tool.textContent, shown,"
            " keyword: document.querySelectorAll('pre.code .kw').length,"
            " heads: Array.from(calls).map(c => c.querySelector('summary').textContent),"
            " bold: document.querySelectorAll('details.call b').length,"
            " journal: document.querySelectorAll('ul.journal li.node').length,"
            " links: Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href'))};"
            "})()",
        )
        visit = chromium.visit(page)
        top = chromium.visit_and_evaluate(
            page, "document.getElementById('transcript').getBoundingClientRect().top + scrollY"
        )
    assert dom["calls"] == 2
    # call 1: system and user, then the assistant's tool call; call 2: only the new tool result
    assert dom["roles"] == ["system", "user", "assistant", "tool", "assistant"]
    assert dom["tool"] == "run_python"
    assert "import nibabel" in dom["toolText"]
    assert dom["keyword"] > 0  # code is highlighted
    assert dom["shown"] == 1  # the search finds the call whose answer holds the code
    assert "1,200 in / 80 out tokens" in dom["heads"][0]
    assert "2.4 s" in dom["heads"][0]
    assert "$0.0023" in dom["heads"][0]
    assert dom["bold"] == 0  # the model's <b> is text
    assert dom["journal"] == 3
    assert any(h and h.endswith("agent_output/logs/tree_plot.html") for h in dom["links"])
    assert any(h and h.endswith("agent_output/logs/journal.json") for h in dom["links"])
    linked = page.with_name("seed-0.files") / "agent_output" / "logs" / "tree_plot.html"
    assert linked.read_text() == "<html><body>AIDE tree</body></html>"
    assert "agent_output/logs/best_solution.py" in visit.text
    assert visit.console_errors == []
    assert visit.network_requests == []
    _save("browser-aide-run.png", visit.screenshot_png, top=max(0, round(top) - 20))


def test_a_ten_agent_leaderboard_fits_without_sideways_scroll(tmp_path: Path) -> None:
    from rexmle.report import collect_runs, write_report

    runs = tmp_path / "runs"
    tasks = ["isles22", "seg_a", "topcow-track1-task1", "panther-task1", "dentex", "ldct-iqa"]
    for a in range(10):
        for number, task in enumerate(tasks):
            folder = runs / "paper" / task / f"agent-with-a-long-name-{a}" / "seed-0"
            folder.mkdir(parents=True)
            record = {"status": "completed", "config": {"mini": False, "time_limit_s": 600.0},
                      "sandbox": {"kind": "bwrap", "isolated": True}}  # fmt: skip
            write_run_json(folder, record)
            from rexmle.tasks.registry import get_task

            key = get_task(task).headline.key
            grade = grade_report_json(
                task, valid=True, metrics={key: 0.05 * a + 0.01 * number}, percentile=a / 10
            )
            (folder / "grade.json").write_text(grade)
            (folder / "submission").mkdir()
            (folder / "submission" / "submission.csv").write_text("id\n")
    site = tmp_path / "site"
    write_report(collect_runs(runs), html_path=site)
    with Chromium() as chromium:
        result = chromium.visit_and_evaluate(
            site / "index.html",
            "(() => {const e = document.scrollingElement;"
            "const rows = Array.from(document.querySelectorAll('table.fit tbody tr'))"
            ".map(r => r.cells[0].textContent);"
            "const th = document.querySelector('table.fit th:last-child'); th.click(); th.click();"
            "const sorted = Array.from(th.closest('table').tBodies[0].rows)"
            ".map(r => r.cells[0].textContent);"
            "return {scroll: e.scrollWidth, client: e.clientWidth, rows, sorted};})()",
        )
    assert result["scroll"] <= result["client"]
    assert "agent-with-a-long-name-9" in result["rows"]
    # sorted by overall mean percentile, descending: the best agent first, the human row last
    assert result["sorted"][0] == "agent-with-a-long-name-9"
    assert result["sorted"][-1] == "best human"
