"""The LiteLLM proxy's auth function and callback (loaded by the proxy, not by the harness).

Copied into the gateway's state folder beside ``config.yaml`` and ``gateway_metering.py`` (a copy
of :mod:`rexmle.llm.metering`); the proxy's environment has ``REXMLE_GATEWAY_STATE`` (that
folder, also on ``PYTHONPATH``) and the provider keys.

- :func:`authenticate` (``general_settings.custom_auth``): every request must carry a registered
  run token (``Authorization: Bearer``, ``x-api-key``, or for the Gemini routes
  ``x-goog-api-key`` or ``?key=``) and go to a completion route; anything else (admin, key,
  config, UI routes) is refused.
- :data:`handler` (``litellm_settings.callbacks``): refuses a call whose ``model`` is not a
  configured ``gw/`` alias (a deployment name or id included; on a native route also the bare
  names of :mod:`rexmle.llm.native_routes`), admits, holds back or refuses the others (budget,
  calls in flight, rate cap), then writes each call's usage line, charged at the price of the
  deployment that served it, and its trajectory entry. An answer whose usage the upstream did
  not report (all counts zero) is charged :func:`rexmle.llm.metering.unreported_usage`.
  A call that failed after its answer began (:func:`rexmle.llm.relay_watch.answer_begun`: a
  stream broken off) is an ``error`` charged as the direct path charges it
  (:mod:`rexmle.llm.fast_path`): the usage the relayed answer reported in full, else
  :func:`~rexmle.llm.metering.unreported_usage` of the text relayed, its line starting with
  ``BROKEN_OFF``; one that failed before costs nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NoReturn

import gateway_fast as fast
import gateway_metering as metering
import gateway_native as native
import gateway_native_fast as native_fast
import gateway_relay as relay
from fastapi import HTTPException, Request
from litellm.integrations.custom_logger import CustomLogger
from litellm.proxy._types import UserAPIKeyAuth
from typing_extensions import override

STATE_DIR = Path(os.environ["REXMLE_GATEWAY_STATE"])
SETTINGS = json.loads((STATE_DIR / "gateway.json").read_text(encoding="utf-8"))
PRICES: dict[str, metering.Price] = {
    alias: metering.Price(**price) for alias, price in SETTINGS["prices"].items()
}
UPSTREAM: dict[str, str] = SETTINGS["upstream_models"]
DEPLOYMENTS: dict[str, str] = SETTINGS["deployments"]
"""LiteLLM deployment id -> the alias it serves."""
HIGHEST_PRICE = metering.Price(
    input=max(p.input for p in PRICES.values()),
    cached_input=max(p.cached_input for p in PRICES.values()),
    output=max(p.output for p in PRICES.values()),
)
"""What a call served by a deployment we do not know is charged (never happens by design)."""
HOLD_POLL_S = 0.01
HOLD_MAX_S = float(SETTINGS["hold_max_s"])
"""A held-back call is refused (429) after waiting this long."""
SECRETS = [os.environ[name] for name in SETTINGS["key_env"] if os.environ.get(name)]
ALLOWED_ROUTES = frozenset(SETTINGS["allowed_routes"])
NATIVE_NAMES: dict[str, dict[str, str]] = SETTINGS["native_names"]
"""Per native protocol: bare model name -> the alias it is served and charged as."""
REQUEST_KEYS_NOT_PARAMS = frozenset(
    {"model", "messages", "input", "metadata", "stream", "stream_options", "proxy_server_request"}
)
REGISTRY = metering.shared_registry(STATE_DIR, SECRETS)
RUN_KEY = "rexmle_run_token_id"


def _meter_of(
    metadata: dict[str, Any] | None, *, registered: bool = True
) -> metering.RunMeter | None:
    key = (metadata or {}).get(RUN_KEY)
    return None if key is None else REGISTRY.meter_by_id(str(key), registered=registered)


async def authenticate(request: Request, api_key: str) -> UserAPIKeyAuth:
    """Accept a registered run token on a completion route; refuse everything else."""
    route = request.url.path
    gemini = native.is_gemini_route(route)
    if route not in ALLOWED_ROUTES and not gemini:
        msg = f"rexmle gateway: route {route} is not served; use the completion routes"
        raise HTTPException(status_code=403, detail=msg)
    token = api_key or request.headers.get("x-api-key", "")
    if gemini and not token:
        token = request.headers.get("x-goog-api-key") or request.query_params.get("key") or ""
    token = token.removeprefix("Bearer ").strip()
    if not token or REGISTRY.meter(token) is None:
        msg = "rexmle gateway: unknown run token (use $REXMLE_LLM_TOKEN)"
        raise HTTPException(status_code=401, detail=msg)
    key = metering.token_id(token)
    return UserAPIKeyAuth(api_key=key, metadata={RUN_KEY: key})


def _usage_numbers(response: Any) -> tuple[int, int, int, int]:
    usage = getattr(response, "usage", None)
    if usage is None and isinstance(response, dict):
        usage = response.get("usage")
    if usage is None:
        return native.gemini_usage(response) or (0, 0, 0, 0)

    def get(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    tokens_in = get(usage, "prompt_tokens")
    if tokens_in is None:
        tokens_in = get(usage, "input_tokens") or 0
    tokens_out = get(usage, "completion_tokens")
    if tokens_out is None:
        tokens_out = get(usage, "output_tokens") or 0
    in_details = get(usage, "prompt_tokens_details") or get(usage, "input_tokens_details")
    out_details = get(usage, "completion_tokens_details") or get(usage, "output_tokens_details")
    cached = (get(in_details, "cached_tokens") if in_details is not None else 0) or 0
    reasoning = (get(out_details, "reasoning_tokens") if out_details is not None else 0) or 0
    return int(tokens_in), int(tokens_out), int(cached), int(reasoning)


def _plain(response: Any) -> Any:
    """``response`` as plain JSON values (LiteLLM's response objects are pydantic models)."""
    dump = getattr(response, "model_dump", None)
    return dump() if callable(dump) else response


def _request_body(kwargs: dict[str, Any]) -> dict[str, Any]:
    litellm_params = kwargs.get("litellm_params") or {}
    body = (litellm_params.get("proxy_server_request") or {}).get("body")
    return body if isinstance(body, dict) else {"messages": kwargs.get("messages")}


def _server_request(kwargs: dict[str, Any]) -> dict[str, Any]:
    litellm_params = kwargs.get("litellm_params") or {}
    request = litellm_params.get("proxy_server_request")
    return request if isinstance(request, dict) else {}


def _relayed_reader(data: dict[str, Any]) -> Any:
    """A direct-path reader of the answer LiteLLM relayed for the call ``data`` came from."""
    url = str((data.get("proxy_server_request") or {}).get("url") or "")
    path = re.sub(r"^[a-z]+://[^/]+", "", url).split("?", 1)[0]
    protocol = native.protocol_of(path)
    if protocol == "anthropic":
        return native_fast.MessagesReader(str(data.get("model", "")))
    if protocol == "gemini":
        return native_fast.GeminiReader()
    return fast.ChatReader(SimpleNamespace(_usage_numbers=_usage_numbers), asked_usage=True)


def _broken_off(
    line: metering.UsageLine,
    call_id: str,
    data: dict[str, Any],
    error: BaseException | None,
    text: str,
    meter: metering.RunMeter,
) -> metering.UsageLine:
    """The failed call's ``line``, charged when its answer had begun (see the module
    docstring); ``data``: its body (with ``proxy_server_request``), ``error`` and ``text``: its
    failure.
    """
    relayed = relay.WATCH.get(call_id)
    if not relay.answer_begun(relayed, error, text):
        return line
    reader = _relayed_reader(data)
    pending = b"" if relayed is None else relayed.body().replace(b"\r\n", b"\n")
    for event in pending.split(b"\n\n"):
        if event.strip():
            reader.add(event)
    usage = reader.usage() if reader.complete else None
    broken = f"{fast.BROKEN_OFF} ({line.error or type(error).__name__})"
    if usage is not None:
        note = f"{broken}; {fast.REPORTED}"
    else:
        view = native.estimate_view(data)
        usage = metering.unreported_usage(view, reader.answer(), meter.entry.reserve_output_tokens)
        note = f"{broken}; {metering.UNREPORTED}"
    url = str((data.get("proxy_server_request") or {}).get("url") or "")
    return metering.UsageLine.charged(
        PRICES.get(line.alias, HIGHEST_PRICE),
        usage,
        alias=line.alias,
        upstream_model=line.upstream_model,
        status="error",
        latency_s=line.latency_s,
        stream=bool(data.get("stream")) or ":streamGenerateContent" in url,
        dropped_params=line.dropped_params,
        error=note,
    )


def _dropped(kwargs: dict[str, Any]) -> list[str]:
    """Parameters the agent sent that did not reach the upstream (``drop_params``)."""
    litellm_params = kwargs.get("litellm_params") or {}
    body = (litellm_params.get("proxy_server_request") or {}).get("body") or {}
    sent = (kwargs.get("additional_args") or {}).get("complete_input_dict") or kwargs.get(
        "optional_params"
    )
    if not isinstance(sent, dict):
        return []
    requested = [
        name
        for name in body
        if name not in REQUEST_KEYS_NOT_PARAMS and not name.startswith(("litellm_", "_litellm_"))
    ]
    return sorted(name for name in requested if name not in sent)


def _call_id(data: dict[str, Any]) -> str:
    return str(data.get("litellm_call_id") or "")


def _refuse(meter: metering.RunMeter, data: dict[str, Any], status: int, message: str) -> NoReturn:
    """Write the refused call's usage line and answer ``status`` with ``message``."""
    model = str(data.get("model", ""))
    meter.record(
        metering.UsageLine(
            time=metering.now_iso(),
            alias=model,
            upstream_model=UPSTREAM.get(model, ""),
            status="refused",
            error=message,
        )
    )
    raise HTTPException(status_code=status, detail=message)


class MeteringHandler(CustomLogger):
    """Model check, budget, calls in flight and rate cap before each call; usage line and
    trajectory after it.
    """

    @override
    async def async_pre_call_hook(
        self, user_api_key_dict: UserAPIKeyAuth, cache: Any, data: dict, call_type: Any
    ) -> dict:
        """Refuse a model that is not an alias, a spent budget or a reached rate cap; hold the
        call back while the run's calls in flight fill their cap or hold the budget.
        """
        meter = _meter_of(user_api_key_dict.metadata)
        if meter is None:
            raise HTTPException(status_code=401, detail="rexmle gateway: unknown run token")
        protocol = native.request_protocol(data)
        model = native.served_alias(data.get("model"), protocol, PRICES.keys(), NATIVE_NAMES)
        if model is None:
            shown = metering.clip(str(data.get("model")), 80)
            served = ", ".join(sorted(PRICES))
            _refuse(
                meter, data, 400, f"rexmle gateway: model {shown!r} is not served; use {served}"
            )
        data["model"] = model
        view = native.estimate_view(data)
        estimate = metering.estimate_usd(PRICES[model], view, meter.entry.reserve_output_tokens)
        deadline = time.monotonic() + HOLD_MAX_S
        while True:
            try:
                meter.admit(_call_id(data), estimate)
                return data
            except metering.Refusal as refusal:
                _refuse(meter, data, refusal.status, refusal.message)
            except metering.HoldBack as held:
                if time.monotonic() >= deadline:
                    message = f"rexmle gateway: {held.message} for {HOLD_MAX_S:g} s; retry later"
                    _refuse(meter, data, 429, message)
                await asyncio.sleep(HOLD_POLL_S)

    @override
    async def async_post_call_failure_hook(
        self,
        request_data: dict,
        original_exception: Exception,
        user_api_key_dict: UserAPIKeyAuth,
        traceback_str: str | None = None,
    ) -> None:
        """Write the line of an admitted call that failed without a failure event (once)."""
        meter = _meter_of(user_api_key_dict.metadata, registered=False)
        call_id = _call_id(request_data)
        if meter is None or not call_id or not meter.is_in_flight(call_id):
            return
        model = str(request_data.get("model", ""))
        line = metering.UsageLine(
            time=metering.now_iso(),
            alias=model,
            upstream_model=UPSTREAM.get(model, ""),
            status="error",
            error=str(original_exception),
        )
        line = _broken_off(line, call_id, request_data, original_exception, "", meter)
        meter.record(line, call_id=call_id)

    def _line(
        self, kwargs: dict[str, Any], response: Any, status: str, reserve_output_tokens: int = 0
    ) -> metering.UsageLine:
        payload = kwargs.get("standard_logging_object") or {}
        model_info = (kwargs.get("litellm_params") or {}).get("model_info") or {}
        deployment = str(payload.get("model_id") or model_info.get("id") or "")
        alias = DEPLOYMENTS.get(deployment)
        error = payload.get("error_str") if status == "error" else None
        price = HIGHEST_PRICE if alias is None else PRICES[alias]
        if alias is None:
            alias = str(payload.get("model_group") or kwargs.get("model") or "")
            if deployment or status == "ok":
                error = f"unknown deployment {deployment!r}: charged at the highest price"
        tokens_in, tokens_out, cached, reasoning = _usage_numbers(response)
        if status == "ok" and tokens_in == tokens_out == 0:
            body = native.estimate_view(_request_body(kwargs))
            answer = _plain(response)
            answer = answer.get("choices", answer) if isinstance(answer, dict) else answer
            numbers = metering.unreported_usage(body, answer, reserve_output_tokens)
            tokens_in, tokens_out, cached, reasoning = numbers
            error = metering.UNREPORTED
        start = payload.get("startTime") or 0.0
        end = payload.get("endTime") or start
        return metering.UsageLine.charged(
            price,
            (tokens_in, tokens_out, cached, reasoning),
            alias=alias,
            upstream_model=UPSTREAM.get(alias, str(payload.get("model") or "")),
            status=status,
            latency_s=round(float(end) - float(start), 4),
            stream=bool(payload.get("stream")),
            dropped_params=_dropped(kwargs),
            error=None if error is None else str(error),
        )

    def _meter(self, kwargs: dict[str, Any]) -> metering.RunMeter | None:
        metadata = (kwargs.get("litellm_params") or {}).get("metadata") or {}
        return _meter_of(metadata.get("user_api_key_auth_metadata"), registered=False)

    def _trajectory(self, kwargs: dict[str, Any], line: metering.UsageLine) -> dict[str, Any]:
        payload = kwargs.get("standard_logging_object") or {}
        return {
            "time": line.time,
            "alias": line.alias,
            "status": line.status,
            "request": {
                "messages": payload.get("messages"),
                "params": payload.get("model_parameters"),
            },
            "response": payload.get("response"),
            "error": line.error,
        }

    @override
    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """Write the call's usage line and trajectory entry."""
        meter = self._meter(kwargs)
        if meter is None:
            return
        line = self._line(kwargs, response_obj, "ok", meter.entry.reserve_output_tokens)
        meter.record(line, self._trajectory(kwargs, line), call_id=_call_id(kwargs))

    @override
    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """Write a failed call's line (no tokens, no cost); our own refusals are written already."""
        meter = self._meter(kwargs)
        if meter is None:
            return
        if "rexmle gateway:" in str((kwargs.get("standard_logging_object") or {}).get("error_str")):
            return
        call_id = _call_id(kwargs)
        if call_id and not meter.is_in_flight(call_id):
            return
        line = self._line(kwargs, None, "error")
        error = kwargs.get("exception")
        text = str(kwargs.get("traceback_exception") or "")
        body = {**_request_body(kwargs), "proxy_server_request": _server_request(kwargs)}
        line = _broken_off(
            line, call_id, body, error if isinstance(error, BaseException) else None, text, meter
        )
        meter.record(line, self._trajectory(kwargs, line), call_id=call_id)


handler = MeteringHandler()
