"""The scripted upstream stand-in speaks the OpenAI chat/Responses and Anthropic messages APIs."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any

import pytest

from rexmle.llm.standin import Reply, ScriptedUpstream, ToolCall, embedding, load_script


def post(upstream: ScriptedUpstream, path: str, body: dict[str, Any], **headers: str):
    conn = http.client.HTTPConnection("127.0.0.1", upstream.port, timeout=10)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **headers})
    response = conn.getresponse()
    raw = response.read().decode()
    conn.close()
    return response.status, raw


def sse(raw: str) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) of every SSE event in ``raw``."""
    events = []
    for block in raw.strip().split("\n\n"):
        name = None
        data = None
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                text = line.removeprefix("data: ")
                data = text if text == "[DONE]" else json.loads(text)
        events.append((name, data))
    return events


CHAT = {"model": "gpt-5", "messages": [{"role": "user", "content": "one two three"}]}


def test_chat_completion_answers_the_scripted_text_and_usage():
    with ScriptedUpstream([Reply(text="hello there", input_tokens=40, cached_tokens=10)]) as up:
        status, raw = post(up, "/v1/chat/completions", CHAT)
    body = json.loads(raw)
    assert status == 200
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "hello there"}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["prompt_tokens"] == 40
    assert body["usage"]["prompt_tokens_details"]["cached_tokens"] == 10
    assert body["usage"]["completion_tokens"] == 2  # two words
    assert up.requests[0].body == CHAT


def test_chat_usage_counts_request_words_when_not_scripted():
    with ScriptedUpstream([Reply(text="a b c d")]) as up:
        _, raw = post(up, "/chat/completions", CHAT)
    usage = json.loads(raw)["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (3, 4)


def test_streamed_chat_sends_usage_only_with_include_usage():
    reply = Reply(text="streamed answer text", input_tokens=7, output_tokens=5)
    with ScriptedUpstream([reply, reply]) as up:
        _, plain = post(up, "/v1/chat/completions", {**CHAT, "stream": True})
        _, with_usage = post(
            up,
            "/v1/chat/completions",
            {**CHAT, "stream": True, "stream_options": {"include_usage": True}},
        )
    plain_events = [data for _, data in sse(plain)]
    assert plain_events[-1] == "[DONE]"
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in plain_events[:-1])
    assert text == "streamed answer text"
    assert all("usage" not in e for e in plain_events[:-1])
    usage_chunk = [data for _, data in sse(with_usage)][-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["prompt_tokens"] == 7
    assert usage_chunk["usage"]["completion_tokens"] == 5


def test_streamed_chat_tool_call_arguments_reassemble():
    call = ToolCall("submit_review", {"is_bug": False, "metric": 0.5, "summary": "fine"})
    with ScriptedUpstream([Reply(tool_calls=(call,))]) as up:
        _, raw = post(up, "/v1/chat/completions", {**CHAT, "stream": True})
    chunks = [data for _, data in sse(raw)][:-1]
    parts = [
        tc["function"]["arguments"]
        for c in chunks
        for tc in c["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert json.loads("".join(parts)) == call.arguments
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_responses_api_plain_and_streamed():
    body = {"model": "gpt-5", "input": "say hi please"}
    reply = Reply(text="hi", reasoning_tokens=3, output_tokens=4)
    with ScriptedUpstream([reply, reply]) as up:
        _, plain = post(up, "/v1/responses", body)
        _, streamed = post(up, "/v1/responses", {**body, "stream": True})
    answer = json.loads(plain)
    assert answer["output"][0]["content"][0]["text"] == "hi"
    assert answer["usage"]["input_tokens"] == 3
    assert answer["usage"]["output_tokens_details"]["reasoning_tokens"] == 3
    events = sse(streamed)
    names = [name for name, _ in events]
    assert names[0] == "response.created"
    assert names[-1] == "response.completed"
    deltas = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    assert deltas == "hi"
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))


def test_anthropic_messages_report_cache_reads_apart():
    body = {"model": "claude-sonnet-4-5", "max_tokens": 50, "messages": CHAT["messages"]}
    reply = Reply(text="bonjour", input_tokens=30, cached_tokens=20, output_tokens=2)
    call = ToolCall("run", {"code": "print(1)"}, id="toolu_1")
    with ScriptedUpstream([reply, Reply(tool_calls=(call,))]) as up:
        _, plain = post(up, "/v1/messages", body)
        _, streamed = post(up, "/v1/messages", {**body, "stream": True})
    answer = json.loads(plain)
    assert answer["content"] == [{"type": "text", "text": "bonjour"}]
    assert answer["usage"]["input_tokens"] == 10  # 30 - 20 cached
    assert answer["usage"]["cache_read_input_tokens"] == 20
    events = sse(streamed)
    assert next(n for n, _ in events) == "message_start"
    assert [n for n, _ in events][-1] == "message_stop"
    partial = "".join(d["delta"]["partial_json"] for n, d in events if n == "content_block_delta")
    assert json.loads(partial) == {"code": "print(1)"}
    assert next(d for n, d in events if n == "message_delta")["delta"]["stop_reason"] == "tool_use"


def test_error_status_has_the_providers_error_shape():
    with ScriptedUpstream([Reply(status=429, error="slow down"), Reply(status=500)]) as up:
        status_openai, openai_raw = post(up, "/v1/chat/completions", CHAT)
        status_anthropic, anthropic_raw = post(up, "/v1/messages", CHAT)
    assert status_openai == 429
    assert json.loads(openai_raw)["error"]["message"] == "slow down"
    assert status_anthropic == 500
    assert json.loads(anthropic_raw)["type"] == "error"


def test_api_keys_are_enforced_and_recorded():
    with ScriptedUpstream(api_keys={"sk-upstream"}) as up:
        refused, _ = post(up, "/v1/chat/completions", CHAT, Authorization="Bearer wrong")
        accepted, _ = post(up, "/v1/messages", CHAT, **{"x-api-key": "sk-upstream"})
    assert (refused, accepted) == (401, 200)
    assert up.requests[1].headers["x-api-key"] == "sk-upstream"


def test_delay_and_hang():
    with ScriptedUpstream([Reply(text="late", delay_s=0.5)]) as up:
        started = time.monotonic()
        post(up, "/v1/chat/completions", CHAT)
        assert time.monotonic() - started >= 0.5
        up.push(Reply(hang=True))
        conn = http.client.HTTPConnection("127.0.0.1", up.port, timeout=1)
        conn.request("POST", "/v1/chat/completions", json.dumps(CHAT))
        with pytest.raises(TimeoutError):
            conn.getresponse()
        conn.close()


def test_queue_then_responder_then_default():
    with ScriptedUpstream(
        [Reply(text="first")], responder=lambda request: Reply(text=request.body["model"])
    ) as up:
        texts = [
            json.loads(post(up, "/v1/chat/completions", CHAT)[1])["choices"][0]["message"][
                "content"
            ]
            for _ in range(2)
        ]
    assert texts == ["first", "gpt-5"]
    assert len(up.completion_requests()) == 2


def test_embeddings_are_deterministic_and_do_not_take_replies():
    with ScriptedUpstream([Reply(text="kept")]) as up:
        _, raw = post(up, "/v1/embeddings", {"model": "e", "input": ["a b", "c"]})
        _, chat = post(up, "/v1/chat/completions", CHAT)
    data = json.loads(raw)
    assert data["data"][0]["embedding"] == embedding("a b")
    assert data["usage"]["prompt_tokens"] == 3
    assert json.loads(chat)["choices"][0]["message"]["content"] == "kept"


def test_script_file_round_trip(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"text": "x", "tool_calls": [{"name": "f", "arguments": {}}]}]))
    assert load_script(path) == [Reply(text="x", tool_calls=(ToolCall("f", {}),))]
    path.write_text("{}")
    with pytest.raises(ValueError, match="expected a JSON list"):
        load_script(path)


GEMINI = {"contents": [{"role": "user", "parts": [{"text": "one two three"}]}]}


def test_gemini_generate_content_reports_thoughts_and_cache_apart():
    reply = Reply(text="hallo", input_tokens=30, cached_tokens=20, output_tokens=9,
                  reasoning_tokens=4)  # fmt: skip
    call = ToolCall("submit_review", {"is_bug": True})
    with ScriptedUpstream([reply, Reply(tool_calls=(call,))]) as up:
        status, raw = post(up, "/v1beta/models/gemini-3-pro-preview:generateContent", GEMINI)
        _, tool = post(up, "/v1beta/models/gemini-3-pro-preview:generateContent", GEMINI)
    answer = json.loads(raw)
    assert status == 200
    assert answer["candidates"][0]["content"] == {"role": "model", "parts": [{"text": "hallo"}]}
    assert answer["usageMetadata"] == {
        "promptTokenCount": 30,  # cached included
        "cachedContentTokenCount": 20,
        "candidatesTokenCount": 5,  # 9 - 4 thoughts
        "thoughtsTokenCount": 4,
        "totalTokenCount": 39,
    }
    assert answer["modelVersion"] == "gemini-3-pro-preview"
    parts = json.loads(tool)["candidates"][0]["content"]["parts"]
    assert parts == [{"functionCall": {"name": "submit_review", "args": {"is_bug": True}}}]
    assert json.loads(tool)["usageMetadata"]["promptTokenCount"] == 3  # words of contents


def test_gemini_streams_sse_with_alt_sse_and_a_json_array_without():
    reply = Reply(text="streamed gemini answer", input_tokens=5, output_tokens=3)
    path = "/v1beta/models/gemini-3-pro-preview:streamGenerateContent"
    with ScriptedUpstream([reply, reply]) as up:
        _, sse_raw = post(up, path + "?alt=sse", GEMINI)
        _, array_raw = post(up, path, GEMINI)
    events = sse(sse_raw)
    assert all(name is None for name, _ in events)
    chunks = [data for _, data in events]
    array = json.loads(array_raw)
    assert [c["responseId"] for c in array] == ["gemini-2"] * len(chunks)  # the second call
    assert [{**c, "responseId": "gemini-1"} for c in array] == chunks
    text = "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks)
    assert text == "streamed gemini answer"
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert "finishReason" not in chunks[0]["candidates"][0]
    assert chunks[-1]["usageMetadata"]["candidatesTokenCount"] == 3


def test_gemini_keys_errors_and_unknown_verbs():
    with ScriptedUpstream([Reply(status=429, error="quota")], api_keys={"g-key"}) as up:
        path = "/v1beta/models/gemini-3-pro-preview:generateContent"
        refused = post(up, path, GEMINI, **{"x-goog-api-key": "wrong"})
        limited = post(up, path + "?key=g-key", GEMINI)
        unknown = post(up, "/v1beta/models/gemini-3-pro-preview:countTokens", GEMINI,
                       **{"x-goog-api-key": "g-key"})  # fmt: skip
    assert refused[0] == 401
    assert json.loads(refused[1])["error"]["status"] == "UNAUTHENTICATED"
    assert limited[0] == 429
    assert json.loads(limited[1]) == {
        "error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}
    }
    assert unknown[0] == 404
    assert [r.path for r in up.completion_requests()] == [path, path + "?key=g-key"]
