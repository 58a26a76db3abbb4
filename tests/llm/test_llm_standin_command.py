"""``rexmle llm standin``: the offline provider a user tries agents with, and its shipped config."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rexmle.llm.config import load_llm_config, parse_llm_config
from rexmle.llm.environment import install_gateway
from rexmle.llm.gateway import Gateway
from rexmle.llm.standin import DEFAULT_PORT, standin_config_path, standin_config_text

REXMLE = str(Path(sys.executable).with_name("rexmle"))


def test_the_shipped_config_serves_the_built_in_models_from_the_standin() -> None:
    shipped = load_llm_config(standin_config_path())
    built_in = load_llm_config(None)
    assert set(shipped.models) == set(built_in.models)
    for name, model in shipped.models.items():
        assert model.price == built_in.models[name].price  # budgets act as with the provider
    for provider in shipped.providers.values():
        assert provider.base_url.startswith(f"http://127.0.0.1:{DEFAULT_PORT}")
        assert provider.key_env is None
    printed = subprocess.run(
        [REXMLE, "llm", "standin", "--config-path"], capture_output=True, text=True, check=True
    )
    assert Path(printed.stdout.strip()) == standin_config_path()


def test_a_bad_reply_script_is_refused_with_its_file(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text('{"text": "not a list"}')
    done = subprocess.run(
        [REXMLE, "llm", "standin", "--port", "0", "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert str(script) in done.stderr
    assert "expected a JSON list" in done.stderr


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The command on a free port with a two-reply script; (its base URL, its written config)."""
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([{"text": "first answer"}, {"status": 429, "error": "slow"}]))
    config = tmp_path / "standin.yaml"
    options = ["--config-out", str(config), "--default-text", "after the script"]
    process = subprocess.Popen(
        [REXMLE, "llm", "standin", "--port", "0", "--script", str(script), *options],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().split()
        assert first[:2] == ["listening", "on"], first
        assert process.stdout.readline().strip() == f"LLM config: {config}"
        yield first[2], config
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0


def _post(port: int, path: str, body: dict, headers: dict[str, str]) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **headers})
    response = conn.getresponse()
    status, text = response.status, response.read().decode()
    conn.close()
    return status, json.loads(text)


def test_the_command_answers_its_script_in_order_then_the_default(served) -> None:
    base_url, config = served
    port = int(base_url.rsplit(":", 1)[1])
    chat = {"model": "gpt-5", "messages": [{"role": "user", "content": "hello there"}]}
    status, body = _post(port, "/v1/chat/completions", chat, {})
    assert status == 200
    assert body["choices"][0]["message"]["content"] == "first answer"
    assert body["usage"]["prompt_tokens"] == 2  # one token per word of the messages
    assert _post(port, "/v1/chat/completions", chat, {})[0] == 429
    status, body = _post(port, "/v1/chat/completions", chat, {})
    assert body["choices"][0]["message"]["content"] == "after the script"
    written = load_llm_config(config)
    assert {p.base_url.split("/")[2] for p in written.providers.values()} == {f"127.0.0.1:{port}"}


@pytest.mark.slow
def test_an_agent_call_through_the_gateway_reaches_the_command_and_is_metered(
    served, tmp_path: Path
) -> None:
    _, config = served
    env, _ = install_gateway()
    with Gateway(load_llm_config(config), env=env) as gateway:
        assert set(gateway.aliases) >= {"gw/gpt-5", "gw/claude-sonnet-4-5"}
        link = gateway.register("try", tmp_path)
        chat = {"model": "gw/gpt-5", "messages": [{"role": "user", "content": "hi"}]}
        status, body = _post(
            gateway.port, "/v1/chat/completions", chat, {"Authorization": f"Bearer {link.token}"}
        )
        assert status == 200, body
        assert body["choices"][0]["message"]["content"] == "first answer"
        totals = link.totals()
        gateway.unregister(link)
    assert totals.calls == 1
    assert totals.cost_usd > 0  # priced as the built-in config prices gpt-5


def test_a_config_for_another_port_says_its_own_port_and_how_it_was_made() -> None:
    text = standin_config_text(40123)
    assert parse_llm_config(text, "written").providers  # still a valid config
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert comments, "the written config explains itself"
    # its comments never claim that 40123 is the default port, nor that --config-path gives it
    assert not any("40123" in line and "default" in line for line in comments), comments
    assert not any("--config-path" in line for line in comments), comments
    assert any("--port 40123 --config-out" in line for line in comments), comments
    bases = {
        line.split("base_url:")[1].strip() for line in text.splitlines() if "base_url:" in line
    }
    assert bases == {"http://127.0.0.1:40123/v1", "http://127.0.0.1:40123"}
    assert standin_config_text(DEFAULT_PORT) == standin_config_path().read_text(encoding="utf-8")
