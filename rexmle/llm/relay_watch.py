"""What the guard relayed of each call LiteLLM answers (standard library only; loaded by the
proxy's guard and hook, not by the harness).

Copied into the gateway's state folder as ``gateway_relay.py``. LiteLLM reports a streamed call
whose upstream broke off after its answer began as a plain failure, without the usage or the
text the agent already got. The guard gives every request it hands LiteLLM a call id of its own
(LiteLLM's ``x-litellm-call-id`` header, the agent's own value replaced) and keeps here, under
that id, the status and the bytes it relayed (:class:`Relayed`); the hook's failure callbacks
read them (:func:`answer_begun`, :meth:`Relayed.body`) to charge the call as the direct path
charges it (:mod:`rexmle.llm.fast_path`).

Definitions:
    Answer begun (a LiteLLM call): the guard relayed a 200 answer for it (LiteLLM starts a
    stream only once the upstream's first chunk came), or its failure is the upstream's answer
    cut short (:data:`CUT_SHORT`: the HTTP client's error for a body that ended before its
    length or last chunk, which only an upstream that answered can raise).
    Kept: the relayed bytes of a call while LiteLLM serves it, at most :data:`RELAYED_MAX_BYTES`
    (bytes past it are counted, not kept); after its answer ends, the :data:`FINISHED_KEPT` most
    recent calls (a failure callback LiteLLM runs later still finds them).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

CALL_ID_HEADER = b"x-litellm-call-id"
"""The header LiteLLM takes its call id from (the guard sets it on every request)."""
RELAYED_MAX_BYTES = 4 << 20
FINISHED_KEPT = 32
CUT_SHORT = (
    "Response payload is not completed",  # aiohttp's ClientPayloadError
    "incomplete chunked read",  # httpx / h11
    "peer closed connection without sending complete message body",
)
"""Marks of an upstream answer cut short, in a failure's text or its causes' (see above)."""


class Relayed:
    """One call as the guard relayed it: its status (0 before the answer started) and body."""

    def __init__(self) -> None:
        self.status = 0
        self.chunks: list[bytes] = []
        self.size = 0

    def add(self, body: bytes) -> None:
        """Keep a relayed body piece (up to :data:`RELAYED_MAX_BYTES`)."""
        if body and self.size + len(body) <= RELAYED_MAX_BYTES:
            self.chunks.append(body)
        self.size += len(body)

    def body(self) -> bytes:
        """The relayed body kept so far."""
        return b"".join(self.chunks)


class Watch:
    """The calls LiteLLM serves, by the guard's call id (thread-safe)."""

    def __init__(self) -> None:
        self._open: dict[str, Relayed] = {}
        self._finished: OrderedDict[str, Relayed] = OrderedDict()
        self._lock = threading.Lock()

    def open(self, call_id: str) -> Relayed:
        """Start watching ``call_id``."""
        relayed = Relayed()
        with self._lock:
            self._open[call_id] = relayed
        return relayed

    def close(self, call_id: str) -> None:
        """The call's answer ended: keep it among the finished ones (see the module docstring)."""
        with self._lock:
            relayed = self._open.pop(call_id, None)
            if relayed is None:
                return
            self._finished[call_id] = relayed
            while len(self._finished) > FINISHED_KEPT:
                self._finished.popitem(last=False)

    def get(self, call_id: str) -> Relayed | None:
        """What was relayed of ``call_id``, or None when it is not known."""
        with self._lock:
            return self._open.get(call_id) or self._finished.get(call_id)


WATCH = Watch()
"""The proxy process's watch (the guard writes it, the hook reads it)."""


def cut_short(error: BaseException | None, text: str = "") -> bool:
    """Whether a failure (``error`` and its causes, or its ``text``) is an upstream answer cut
    short (see the module docstring).
    """
    seen: set[int] = set()
    texts = [text]
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        texts.append(f"{type(error).__name__}: {error}")
        error = error.__cause__ or error.__context__
    return any(mark in part for part in texts for mark in CUT_SHORT)


def answer_begun(relayed: Relayed | None, error: BaseException | None, text: str = "") -> bool:
    """Whether a failed LiteLLM call's answer had begun (see the module docstring)."""
    return (relayed is not None and relayed.status == 200) or cut_short(error, text)
