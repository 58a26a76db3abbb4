"""The transcript viewer of a run page: every LLM call through the gateway, as messages by role.

Read from the run folder: the gateway's trajectory (``llm_trajectory.jsonl``: per call its
time, model alias, status, request messages and response) and usage log (``llm_usage.jsonl``:
per call tokens, cost and latency). A trajectory entry and a usage line belong to the same
call when their time, alias and status agree (the gateway writes both from one record);
usage lines without a trajectory entry (calls the gateway refused, calls after the trajectory's
size cap) are shown as calls too, except those older than the part of a long trajectory read.

Per call the viewer shows the messages that are new since the previous call (a conversation
that grows by appending is not repeated; the number of earlier messages is said), then the
response: text with fenced code blocks highlighted, tool calls with their arguments, tool
results. OpenAI (``choices[0].message``, ``tool_calls``) and Anthropic (``content`` blocks of
``text``, ``tool_use``, ``tool_result``) shapes are understood. Everything is escaped: a model's
output is text, never markup. A search box hides the calls that do not contain its text; the
newest call (every call of a transcript of at most three) is shown unfolded.
"""

from __future__ import annotations

import html
import json
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path

from rexmle.report.htmlpage import human_iso, human_number, human_seconds

TRANSCRIPT_CAP_BYTES = 4 * 1024 * 1024
"""Of a larger trajectory only the last this many bytes are read (the page says so)."""
USAGE_CAP_BYTES = 2 * 1024 * 1024
MAX_CALLS = 500
MESSAGE_CHARS = 20_000
"""Longer message texts are cut (the number of characters left out is shown)."""
TRAJECTORY_FILE = "llm_trajectory.jsonl"
USAGE_FILE = "llm_usage.jsonl"
PYTHON_KEYWORDS = frozenset(keyword.kwlist)
_PY_TOKEN = re.compile(
    r"(?P<comment>#[^\n]*)"
    r"|(?P<string>\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*')"
    r"|(?P<number>\b\d+(?:\.\d*)?(?:[eE][-+]?\d+)?\b)"
    r"|(?P<word>\b[A-Za-z_]\w*\b)"
)
_SH_TOKEN = re.compile(
    r"(?P<comment>(?<![\w$])#[^\n]*)|(?P<string>\"(?:\\.|[^\"\\])*\"|'[^']*')"
    r"|(?P<number>\b\d+\b)|(?P<word>\b[A-Za-z_][\w-]*\b)"
)
_FENCE = re.compile(r"```([\w+-]*)[^\n]*\n([\s\S]*?)(?:```|\Z)")
SCRIPT = (
    "const tq=document.getElementById('transcript-search');if(tq){tq.addEventListener('input',"
    "()=>{const q=tq.value.toLowerCase();let n=0;for(const c of document.querySelectorAll("
    "'details.call')){const hit=!q||c.textContent.toLowerCase().includes(q);"
    "c.style.display=hit?'':'none';if(q&&hit)c.open=true;n+=hit;}"
    "document.getElementById('transcript-count').textContent=q?n+' call(s) match':'';});}"
    "const ta=document.getElementById('transcript-all');if(ta){ta.addEventListener('click',()=>{"
    "const open=ta.dataset.open!=='1';ta.dataset.open=open?'1':'0';"
    "ta.textContent=open?'collapse all':'expand all';"
    "for(const c of document.querySelectorAll('details.call'))c.open=open;});}"
)
STYLE = (
    "<style>details.call{border:1px solid #ccd;border-radius:4px;margin:.4em 0;padding:.2em .6em}"
    "details.call>summary{cursor:pointer;font-size:13px}.msg{margin:.4em 0;padding:.3em .6em;"
    "border-left:4px solid #999;background:#fafafa}.msg .role{font-weight:600;font-size:12px;"
    "text-transform:uppercase;letter-spacing:.04em}.role-system{border-color:#8e44ad}"
    ".role-user{border-color:#1f77b4}.role-assistant{border-color:#2ca02c}"
    ".role-tool{border-color:#e67e22}.msg .text{white-space:pre-wrap;font-size:13px}"
    "pre.code{background:#272822;color:#f8f8f2;padding:.5em;overflow:auto;font-size:12px;"
    "max-height:40em}pre.code .kw{color:#f92672}pre.code .st{color:#e6db74}"
    "pre.code .cm{color:#75715e}pre.code .nu{color:#ae81ff}.toolcall{border:1px dashed #e67e22;"
    "padding:.3em .5em;margin:.3em 0;font-size:13px}.toolcall .name{font-family:monospace;"
    "font-weight:600}.earlier{color:#666;font-size:12px}.callerr{color:#c0392b}</style>"
)


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for."""

    call_id: str
    name: str
    arguments: dict[str, object] | str
    """Parsed JSON arguments, or the raw text when they are not a JSON object."""


@dataclass(frozen=True)
class Message:
    """One message of a conversation, reduced to what the viewer shows."""

    role: str
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    """For a tool result: the call it answers."""


@dataclass
class Call:
    """One LLM call: its new request messages, response and usage."""

    number: int
    time: str
    alias: str
    status: str
    messages: list[Message] = field(default_factory=list)
    earlier: int = 0
    """Request messages not shown because the previous call already showed them."""
    response: list[Message] = field(default_factory=list)
    error: str = ""
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None


def _tail_lines(path: Path, cap: int) -> tuple[list[str], bool]:
    """The complete lines among the last ``cap`` bytes of a file; whether it was cut."""
    if not path.is_file() or path.is_symlink():
        return [], False
    size = path.stat().st_size
    with path.open("rb") as handle:
        handle.seek(max(0, size - cap))
        text = handle.read().decode("utf-8", errors="replace")
    lines = text.splitlines()
    if size > cap and lines:
        lines = lines[1:]  # the first line of a tail is cut
    return lines, size > cap


def _objects(lines: list[str]) -> list[dict[str, object]]:
    found = []
    for line in lines:
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict):
            found.append(item)
    return found


def _text_of(content: object) -> tuple[str, list[ToolCall]]:
    """The text of a message's content (a string or a list of parts) and its tool-use blocks."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        return json.dumps(content, default=str), []
    texts: list[str] = []
    calls: list[ToolCall] = []
    for part in content:
        if not isinstance(part, dict):
            texts.append(str(part))
            continue
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("text", "")))
        elif kind == "tool_use":
            arguments = part.get("input")
            calls.append(
                ToolCall(
                    str(part.get("id", "")),
                    str(part.get("name", "")),
                    arguments if isinstance(arguments, dict) else json.dumps(arguments),
                )
            )
        elif kind == "tool_result":
            inner, _ = _text_of(part.get("content"))
            texts.append(f"[result of {part.get('tool_use_id', '?')}]\n{inner}")
        elif kind in ("image_url", "image"):
            texts.append("[image]")
        else:
            texts.append(json.dumps(part, default=str))
    return "\n".join(texts), calls


def _tool_calls(raw: object) -> list[ToolCall]:
    calls = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        function = item.get("function")
        function = function if isinstance(function, dict) else {}
        text = str(function.get("arguments", ""))
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None
        arguments: dict[str, object] | str = parsed if isinstance(parsed, dict) else text
        calls.append(ToolCall(str(item.get("id", "")), str(function.get("name", "")), arguments))
    return calls


def to_message(raw: object) -> Message:
    """One request or response message (OpenAI or Anthropic shape) for the viewer."""
    if not isinstance(raw, dict):
        return Message("?", json.dumps(raw, default=str))
    text, blocks = _text_of(raw.get("content"))
    calls = tuple(blocks + _tool_calls(raw.get("tool_calls")))
    return Message(str(raw.get("role", "?")), text, calls, str(raw.get("tool_call_id") or ""))


def response_messages(response: object) -> list[Message]:
    """The messages of a response: OpenAI ``choices``, Anthropic ``content``, or plain text."""
    if response is None:
        return []
    if isinstance(response, str):
        return [Message("assistant", response)]
    if isinstance(response, dict):
        choices = response.get("choices")
        if isinstance(choices, list) and choices:
            found = []
            for choice in choices:
                message = choice.get("message") if isinstance(choice, dict) else None
                if isinstance(message, dict):
                    found.append(to_message({"role": "assistant", **message}))
            return found
        if "content" in response:
            return [to_message({"role": response.get("role", "assistant"), **response})]
    return [Message("assistant", json.dumps(response, default=str))]


def _usage_key(item: dict[str, object]) -> tuple[str, str, str]:
    return str(item.get("time", "")), str(item.get("alias", "")), str(item.get("status", ""))


def _int_or_none(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _float_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def read_calls(folder: Path) -> tuple[list[Call], bool]:
    """The LLM calls of a run folder (at most ``MAX_CALLS``, the newest) and whether the
    trajectory was longer than what was read.
    """
    trajectory_lines, cut = _tail_lines(folder / TRAJECTORY_FILE, TRANSCRIPT_CAP_BYTES)
    usage_lines, _ = _tail_lines(folder / USAGE_FILE, USAGE_CAP_BYTES)
    usage: dict[tuple[str, str, str], list[dict[str, object]]] = {}
    for item in _objects(usage_lines):
        usage.setdefault(_usage_key(item), []).append(item)
    every_entry = _objects(trajectory_lines)
    entries = every_entry[-MAX_CALLS:]
    calls: list[Call] = []
    previous: list[object] = []
    for item in entries:
        request = item.get("request")
        request = request if isinstance(request, dict) else {}
        raw_messages = request.get("messages")
        raw_messages = raw_messages if isinstance(raw_messages, list) else []
        shared = len(previous) if previous and raw_messages[: len(previous)] == previous else 0
        response = response_messages(item.get("response"))
        skip = shared
        if shared and len(raw_messages) > shared and response:
            follow = raw_messages[shared]
            skip += isinstance(follow, dict) and follow.get("role") == "assistant"
        call = Call(
            number=len(calls) + 1,
            time=str(item.get("time", "")),
            alias=str(item.get("alias", "")),
            status=str(item.get("status", "")),
            messages=[to_message(m) for m in raw_messages[skip:]],
            earlier=skip,
            response=response,
            error=str(item.get("error") or ""),
        )
        matched = usage.get(_usage_key(item))
        if matched:
            _add_usage(call, matched.pop(0))
        previous = raw_messages
        calls.append(call)
    left_out = cut or len(every_entry) > len(entries)
    oldest = str(entries[0].get("time", "")) if left_out and entries else ""
    for left in (line for lines in usage.values() for line in lines):
        if str(left.get("time", "")) < oldest:
            continue  # a call of the part of the trajectory that was not read
        call = Call(0, *_usage_key(left), error=str(left.get("error") or ""))
        _add_usage(call, left)
        calls.append(call)
    calls.sort(key=lambda c: c.time)
    for number, call in enumerate(calls[-MAX_CALLS:], start=1):
        call.number = number
    return calls[-MAX_CALLS:], cut


def _add_usage(call: Call, line: dict[str, object]) -> None:
    call.tokens_in = _int_or_none(line.get("tokens_in", line.get("prompt_tokens")))
    call.tokens_out = _int_or_none(line.get("tokens_out", line.get("completion_tokens")))
    call.cost_usd = _float_or_none(line.get("cost_usd"))
    call.latency_s = _float_or_none(line.get("latency_s"))


def highlight(code: str, language: str = "python") -> str:
    """``code`` as escaped HTML with spans for keywords, strings, comments and numbers
    (Python rules; shell rules for ``bash``/``sh``/``shell``; others are only escaped).
    """
    language = language.lower()
    if language in ("bash", "sh", "shell", "console"):
        pattern, keywords = _SH_TOKEN, {"if", "then", "fi", "for", "do", "done", "export", "cd"}
    elif language in ("", "python", "py", "python3", "ipython"):
        pattern, keywords = _PY_TOKEN, set(PYTHON_KEYWORDS)
    else:
        return html.escape(code)
    out: list[str] = []
    last = 0
    for found in pattern.finditer(code):
        out.append(html.escape(code[last : found.start()]))
        token = html.escape(found.group(0))
        kind = found.lastgroup
        if kind == "comment":
            out.append(f"<span class='cm'>{token}</span>")
        elif kind == "string":
            out.append(f"<span class='st'>{token}</span>")
        elif kind == "number":
            out.append(f"<span class='nu'>{token}</span>")
        elif found.group(0) in keywords:
            out.append(f"<span class='kw'>{token}</span>")
        else:
            out.append(token)
        last = found.end()
    out.append(html.escape(code[last:]))
    return "".join(out)


def _cut(text: str) -> str:
    if len(text) <= MESSAGE_CHARS:
        return text
    return text[:MESSAGE_CHARS] + f"\n… ({len(text) - MESSAGE_CHARS:,} more characters)"


def text_html(text: str) -> str:
    """Message text: plain parts escaped (whitespace kept), fenced code blocks highlighted."""
    text = _cut(text)
    parts: list[str] = []
    last = 0
    for found in _FENCE.finditer(text):
        if found.start() > last:
            parts.append(f"<div class='text'>{html.escape(text[last : found.start()])}</div>")
        language = found.group(1) or "python"
        parts.append(
            f"<pre class='code' data-lang='{html.escape(language)}'>"
            f"{highlight(found.group(2), language)}</pre>"
        )
        last = found.end()
    if last < len(text):
        parts.append(f"<div class='text'>{html.escape(text[last:])}</div>")
    return "".join(parts)


def _argument_html(key: str, value: object) -> str:
    if isinstance(value, str) and "\n" in value:
        language = "bash" if key in ("cmd", "command", "bash", "shell") else "python"
        return (
            f"<div><span class='name'>{html.escape(key)}</span>:</div>"
            f"<pre class='code' data-lang='{language}'>{highlight(_cut(value), language)}</pre>"
        )
    shown = value if isinstance(value, str) else json.dumps(value, default=str)
    return f"<div><span class='name'>{html.escape(key)}</span>: {html.escape(_cut(shown))}</div>"


def tool_call_html(call: ToolCall) -> str:
    """A tool call: its name, id and arguments (multi-line values as code)."""
    if isinstance(call.arguments, dict):
        body = "".join(_argument_html(str(k), v) for k, v in call.arguments.items())
    else:
        body = f"<pre class='code'>{html.escape(_cut(call.arguments))}</pre>"
    ident = f" <span class='earlier'>{html.escape(call.call_id)}</span>" if call.call_id else ""
    return (
        f"<div class='toolcall' data-tool='{html.escape(call.name)}'>tool call "
        f"<span class='name'>{html.escape(call.name)}</span>{ident}{body}</div>"
    )


def message_html(message: Message) -> str:
    """One message: its role label, text and tool calls."""
    role = re.sub(r"[^a-z]", "", message.role.lower()) or "unknown"
    label = message.role
    if message.tool_call_id:
        label += f" · result of {message.tool_call_id}"
    return (
        f"<div class='msg role-{role}' data-role='{html.escape(message.role)}'>"
        f"<div class='role'>{html.escape(label)}</div>{text_html(message.text)}"
        + "".join(tool_call_html(c) for c in message.tool_calls)
        + "</div>"
    )


def _usage_text(call: Call) -> str:
    parts = []
    if call.tokens_in is not None or call.tokens_out is not None:
        parts.append(
            f"{human_number(call.tokens_in or 0)} in / {human_number(call.tokens_out or 0)} out "
            "tokens"
        )
    if call.latency_s is not None:
        parts.append(human_seconds(call.latency_s))
    if call.cost_usd is not None:
        parts.append(f"${call.cost_usd:.4f}")
    return " · ".join(parts)


def call_html(call: Call, *, opened: bool = False) -> str:
    """One call as a collapsible card: head line with usage, new messages, response."""
    head = " · ".join(
        part
        for part in (
            f"#{call.number}",
            human_iso(call.time),
            call.alias,
            call.status,
            _usage_text(call),
        )
        if part
    )
    body = []
    if call.earlier:
        body.append(
            f"<p class='earlier'>{call.earlier} earlier message(s) of this conversation, "
            "shown in the calls above</p>"
        )
    body += [message_html(m) for m in call.messages]
    if call.response:
        body.append("<p class='earlier'>response:</p>")
        body += [message_html(m) for m in call.response]
    if call.error:
        body.append(f"<p class='callerr'>error: {html.escape(_cut(call.error))}</p>")
    return (
        f"<details class='call' data-status='{html.escape(call.status)}'"
        f"{' open' if opened else ''}>"
        f"<summary>{html.escape(head)}</summary>{''.join(body)}</details>"
    )


def transcript_html(folder: Path) -> str:
    """The transcript section of a run page, or '' when the run recorded no LLM call."""
    calls, cut = read_calls(folder)
    if not calls:
        return ""
    tokens_in = sum(c.tokens_in or 0 for c in calls)
    tokens_out = sum(c.tokens_out or 0 for c in calls)
    cost = sum(c.cost_usd or 0.0 for c in calls)
    latency = sum(c.latency_s or 0.0 for c in calls)
    note = (
        f" (the trajectory is longer: its last {TRANSCRIPT_CAP_BYTES // (1024 * 1024)} MiB)"
        if cut
        else ""
    )
    return (
        f"{STYLE}<h3 id='transcript'>Transcript: {len(calls)} call(s){note}</h3>"
        f"<p>{human_number(tokens_in)} input and {human_number(tokens_out)} output tokens · "
        f"${cost:.4f} · {human_seconds(latency)} waiting for the model</p>"
        "<input id='transcript-search' placeholder='search the transcript'> "
        "<button id='transcript-all' type='button'>expand all</button> "
        "<span id='transcript-count'></span>"
        + "".join(call_html(c, opened=c is calls[-1] or len(calls) <= 3) for c in calls)
    )
