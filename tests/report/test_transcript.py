"""The transcript viewer's reading of a run folder: calls paired with their usage lines, the
conversation not repeated, OpenAI and Anthropic shapes, refused calls, escaping and caps.
"""

from __future__ import annotations

import json
from pathlib import Path

from rexmle.llm.metering import RunEntry, RunMeter, UsageLine
from rexmle.report import transcript
from rexmle.report.transcript import highlight, read_calls, text_html, transcript_html


def _meter(folder: Path) -> RunMeter:
    return RunMeter(
        RunEntry(
            run_id="r",
            usage_path=str(folder / "llm_usage.jsonl"),
            trajectory_path=str(folder / "llm_trajectory.jsonl"),
            stop_path=str(folder / "stop"),
            budget_usd=None,
            max_calls_per_minute=None,
            trajectory_max_bytes=1 << 20,
        ),
        secrets=["sk-secret-value-123"],
    )


def _call(meter: RunMeter, time: str, messages: list, response: object, **usage) -> None:
    line = UsageLine(time=time, alias="claude", upstream_model="anthropic/x", status="ok", **usage)
    meter.record(
        line,
        {"time": time, "alias": "claude", "status": "ok",
         "request": {"messages": messages}, "response": response, "error": None},
    )  # fmt: skip


def test_anthropic_tool_use_and_results_by_role(tmp_path: Path) -> None:
    meter = _meter(tmp_path)
    user = {"role": "user", "content": [{"type": "text", "text": "list the data"}]}
    use = {"type": "tool_use", "id": "tu_1", "name": "bash", "input": {"cmd": "ls data\nwc -l"}}
    first = {"role": "assistant", "content": [{"type": "text", "text": "Looking."}, use]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1",
                                           "content": "train\ntest"}]}  # fmt: skip
    _call(meter, "2026-12-01T10:00:00+00:00", [user], first, tokens_in=10, tokens_out=5,
          cost_usd=0.001, latency_s=1.5)  # fmt: skip
    done = {"role": "assistant", "content": [{"type": "text", "text": "Two folders."}]}
    _call(meter, "2026-12-01T10:00:09+00:00", [user, first, result], done, tokens_in=30)
    # a call the gateway refused: a usage line only
    meter.record(UsageLine(time="2026-12-01T10:01:00+00:00", alias="claude", upstream_model="",
                           status="refused", error="LLM budget of 1 USD spent"))  # fmt: skip
    calls, cut = read_calls(tmp_path)
    assert not cut
    assert [c.status for c in calls] == ["ok", "ok", "refused"]
    assert [m.role for m in calls[0].messages] == ["user"]
    assert calls[0].response[0].tool_calls[0].name == "bash"
    assert calls[0].response[0].tool_calls[0].arguments == {"cmd": "ls data\nwc -l"}
    assert (calls[0].tokens_in, calls[0].cost_usd, calls[0].latency_s) == (10, 0.001, 1.5)
    # the second call shows only the tool result: the user turn and the answer came before
    assert calls[1].earlier == 2
    assert [m.role for m in calls[1].messages] == ["user"]
    assert "[result of tu_1]" in calls[1].messages[0].text
    assert calls[1].tokens_in == 30
    assert calls[2].error == "LLM budget of 1 USD spent"
    page = transcript_html(tmp_path)
    assert "tool call <span class='name'>bash</span>" in page
    assert "<pre class='code' data-lang='bash'>" in page  # the multi-line command as code
    assert "1.5 s" in page
    assert "$0.0010" in page
    assert "2026-12-01 10:00:00 UTC" in page


def test_model_output_is_text_and_code_is_highlighted() -> None:
    shown = text_html("see <script>alert(1)</script>\n```python\nimport os  # why\nx = 'a'\n```")
    assert "<script>" not in shown
    assert "&lt;script&gt;" in shown
    assert "<span class='kw'>import</span>" in shown
    assert "<span class='cm'># why</span>" in shown
    assert "<span class='st'>&#x27;a&#x27;</span>" in shown
    assert highlight("<b>", "rust") == "&lt;b&gt;"  # other languages are only escaped


def test_long_messages_and_long_trajectories_are_cut(tmp_path: Path, monkeypatch) -> None:
    meter = _meter(tmp_path)
    big = "x" * (transcript.MESSAGE_CHARS + 500)
    for minute in range(5):
        _call(meter, f"2026-12-01T10:0{minute}:00+00:00", [{"role": "user", "content": big}], "ok")
    monkeypatch.setattr(transcript, "TRANSCRIPT_CAP_BYTES", 3 * (len(big) + 400))
    calls, cut = read_calls(tmp_path)
    assert cut
    assert 1 <= len(calls) <= 3
    assert calls[-1].time == "2026-12-01T10:04:00+00:00"  # the newest calls are kept
    assert "(500 more characters)" in text_html(big)
    assert "sk-secret-value-123" not in (tmp_path / "llm_trajectory.jsonl").read_text()
    assert json.loads((tmp_path / "llm_usage.jsonl").read_text().splitlines()[0])["alias"]
