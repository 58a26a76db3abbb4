"""A provider that answers without its usage (an OpenAI-compatible server that ignores
``stream_options.include_usage``): the gateway still charges each call, on both of its paths.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from llm_support import usage_lines

from rexmle.llm.config import Limits, parse_llm_config
from rexmle.llm.environment import install_gateway
from rexmle.llm.gateway import Gateway
from rexmle.llm.metering import Price, cost_usd, estimated_tokens

pytestmark = pytest.mark.slow

KEY_ENV = "REXMLE_TEST_NO_USAGE_KEY"
WORDS = 300
RESERVE = 64
PRICE = Price(input=1.25, cached_input=0.125, output=10.0)


class NoUsage(BaseHTTPRequestHandler):
    """Chat completions, streamed or not, that never carry ``usage``."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *_: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = " ".join(f"word{i}" for i in range(WORDS))
        base = {"id": "c1", "created": 1, "model": body["model"]}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            raw = json.dumps({**base, "object": "chat.completion", "choices": [choice]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for word in text.split(" "):
            delta = {"index": 0, "delta": {"content": word + " "}, "finish_reason": None}
            chunk = {**base, "object": "chat.completion.chunk", "choices": [delta]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


@pytest.fixture(scope="module")
def no_usage_upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), NoUsage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "litellm"])
def test_an_answer_without_usage_is_still_charged(
    no_usage_upstream: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, direct: bool
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-no-usage-0123456789abcdef")
    config = parse_llm_config(
        f"""
providers:
  o: {{api: openai, base_url: "{no_usage_upstream}/v1", key_env: {KEY_ENV}}}
models:
  gpt-5: {{provider: o, upstream: gpt-5, price: {{input: 1.25, cached_input: 0.125, output: 10.0}}}}
limits: {{budget_usd: 1.0, max_calls_per_minute: 100}}
""",
        "no-usage config",
    )
    env, _ = install_gateway()
    gateway = Gateway(config, env=env)
    gateway.direct_path = direct
    with gateway:
        link = gateway.register("run", tmp_path, limits=Limits(reserve_output_tokens=RESERVE))
        chat = {"model": "gw/gpt-5", "messages": [{"role": "user", "content": "hello there"}]}
        for body in (chat, {**chat, "stream": True}):
            conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=60)
            headers = {"Content-Type": "application/json", "Authorization": f"Bearer {link.token}"}
            conn.request("POST", "/v1/chat/completions", json.dumps(body), headers)
            answer = conn.getresponse()
            assert answer.status == 200
            assert b"word299" in answer.read()
            conn.close()
        found = usage_lines(link, 2)
        gateway.unregister(link)
    assert [line["status"] for line in found] == ["ok", "ok"], found
    for line in found:
        # every answer's 300 words (about 600 tokens at 4 characters each) are charged
        assert int(str(line["tokens_out"])) >= WORDS, found
        assert float(str(line["cost_usd"])) > 0
    if direct:  # the direct path charges the estimate, its output at least the answer's text
        tokens_in, _ = estimated_tokens(chat, RESERVE)
        for line in found:
            assert line["tokens_in"] == tokens_in
            assert "reported no usage" in str(line["error"])
            tokens_out = int(str(line["tokens_out"]))
            expected = cost_usd(PRICE, tokens_in=tokens_in, tokens_cached=0, tokens_out=tokens_out)
            assert float(str(line["cost_usd"])) == pytest.approx(expected)
