"""The LiteLLM proxy's auth function and callback (loaded by the proxy, not by the harness).

Copied into the gateway's state folder beside ``config.yaml`` and ``gateway_metering.py`` (a copy
of :mod:`rexmle.llm.metering`); the proxy's environment has ``REXMLE_GATEWAY_STATE`` (that
folder, also on ``PYTHONPATH``) and the provider keys.

- :func:`authenticate` (``general_settings.custom_auth``): every request must carry a registered
  run token (``Authorization: Bearer`` or ``x-api-key``) and go to a completion route; anything
  else (admin, key, config, UI routes) is refused.
- :data:`handler` (``litellm_settings.callbacks``): admits or refuses each call (budget, rate
  cap), then writes its usage line and trajectory entry.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gateway_metering as metering
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
SECRETS = [os.environ[name] for name in SETTINGS["key_env"] if os.environ.get(name)]
ALLOWED_ROUTES = frozenset(SETTINGS["allowed_routes"])
REQUEST_KEYS_NOT_PARAMS = frozenset(
    {"model", "messages", "input", "metadata", "stream", "stream_options", "proxy_server_request"}
)
REGISTRY = metering.shared_registry(STATE_DIR, SECRETS)
RUN_KEY = "rexmle_run_token_id"


def _meter_of(metadata: dict[str, Any] | None) -> metering.RunMeter | None:
    key = (metadata or {}).get(RUN_KEY)
    return None if key is None else REGISTRY.meter_by_id(str(key))


async def authenticate(request: Request, api_key: str) -> UserAPIKeyAuth:
    """Accept a registered run token on a completion route; refuse everything else."""
    route = request.url.path
    if route not in ALLOWED_ROUTES:
        msg = f"rexmle gateway: route {route} is not served; use the completion routes"
        raise HTTPException(status_code=403, detail=msg)
    token = api_key or request.headers.get("x-api-key", "")
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
        return 0, 0, 0, 0

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
        if name not in REQUEST_KEYS_NOT_PARAMS and not name.startswith("litellm_")
    ]
    return sorted(name for name in requested if name not in sent)


class MeteringHandler(CustomLogger):
    """Budget and rate cap before each call; usage line and trajectory after it."""

    @override
    async def async_pre_call_hook(
        self, user_api_key_dict: UserAPIKeyAuth, cache: Any, data: dict, call_type: Any
    ) -> dict:
        """Refuse the call when the run's budget is spent or its rate cap is reached."""
        meter = _meter_of(user_api_key_dict.metadata)
        if meter is None:
            raise HTTPException(status_code=401, detail="rexmle gateway: unknown run token")
        try:
            meter.admit()
        except metering.Refusal as refusal:
            meter.record(
                metering.UsageLine(
                    time=metering.now_iso(),
                    alias=str(data.get("model", "")),
                    upstream_model=UPSTREAM.get(str(data.get("model", "")), ""),
                    status="refused",
                    error=refusal.message,
                )
            )
            raise HTTPException(status_code=refusal.status, detail=refusal.message) from None
        return data

    def _line(self, kwargs: dict[str, Any], response: Any, status: str) -> metering.UsageLine:
        payload = kwargs.get("standard_logging_object") or {}
        alias = str(payload.get("model_group") or kwargs.get("model") or "")
        tokens_in, tokens_out, cached, reasoning = _usage_numbers(response)
        price = PRICES.get(alias)
        cost = (
            0.0
            if price is None
            else metering.cost_usd(
                price, tokens_in=tokens_in, tokens_cached=cached, tokens_out=tokens_out
            )
        )
        start = payload.get("startTime") or 0.0
        end = payload.get("endTime") or start
        error = payload.get("error_str") if status == "error" else None
        return metering.UsageLine(
            time=metering.now_iso(),
            alias=alias,
            upstream_model=UPSTREAM.get(alias, str(payload.get("model") or "")),
            status=status,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            tokens_cached=cached,
            tokens_reasoning=reasoning,
            cost_usd=cost,
            latency_s=round(float(end) - float(start), 4),
            stream=bool(payload.get("stream")),
            dropped_params=_dropped(kwargs),
            error=None if error is None else str(error)[:2000],
        )

    def _meter(self, kwargs: dict[str, Any]) -> metering.RunMeter | None:
        metadata = (kwargs.get("litellm_params") or {}).get("metadata") or {}
        return _meter_of(metadata.get("user_api_key_auth_metadata"))

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
        line = self._line(kwargs, response_obj, "ok")
        meter.record(line, self._trajectory(kwargs, line))

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
        line = self._line(kwargs, None, "error")
        meter.record(line, self._trajectory(kwargs, line))


handler = MeteringHandler()
