"""The LiteLLM proxy's ``config.yaml`` and our callback's settings, generated from an LlmConfig.

Each model becomes one ``model_list`` entry named ``gw/<name>``: the upstream model with the
provider's prefix (``openai/gpt-5``), its ``api_base``, its key as ``os.environ/<key_env>`` (the
value is never written to a file), the pinned prices per token and the deployment id
``rexmle:gw/<name>`` in ``model_info`` (the callback charges a call by the deployment that served
it). The proxy runs our auth function and callback (:mod:`rexmle.llm.proxy_hook`),
``modify_params`` (e.g. a system-only prompt made acceptable to Anthropic) and ``drop_params`` as
configured, no retries, and the config's upstream timeout.
"""

from __future__ import annotations

from typing import Any

from rexmle.llm.config import ALIAS_PREFIX, LlmConfig
from rexmle.llm.native_routes import native_names

HOOK_MODULE = "proxy_hook"
METERING_MODULE = "gateway_metering"
GUARD_MODULE = "gateway_guard"
LAUNCH_MODULE = "gateway_launch"
NATIVE_MODULE = "gateway_native"
FAST_MODULE = "gateway_fast"
NATIVE_FAST_MODULE = "gateway_native_fast"
MASTER_KEY_ENV = "LITELLM_MASTER_KEY"
DEPLOYMENT_PREFIX = "rexmle:"

MODEL_ROUTES = ("/chat/completions", "/completions", "/responses", "/messages", "/embeddings")
"""The completion routes: each call names a model, which must be a configured alias."""
ALLOWED_ROUTES = tuple(
    prefix + route for route in (*MODEL_ROUTES, "/models") for prefix in ("", "/v1")
)
"""The only routes a run token may call besides the Gemini generate routes
(:mod:`rexmle.llm.native_routes`); admin, key, config, UI and other routes are refused."""


def deployment_id(alias: str) -> str:
    """The LiteLLM deployment id of an alias's model (``rexmle:gw/gpt-5``)."""
    return DEPLOYMENT_PREFIX + alias


def usable_models(config: LlmConfig, environ: dict[str, str]) -> tuple[list[str], list[str]]:
    """(aliases whose provider key is set or not needed, aliases skipped for a missing key)."""
    usable: list[str] = []
    skipped: list[str] = []
    for alias, model in config.aliases().items():
        key_env = config.providers[model.provider].key_env
        (usable if key_env is None or environ.get(key_env) else skipped).append(alias)
    return usable, skipped


def litellm_config(config: LlmConfig, aliases: list[str]) -> dict[str, Any]:
    """The proxy's config.yaml (as a dict) serving ``aliases``."""
    entries = []
    for alias in aliases:
        model = config.aliases()[alias]
        provider = config.providers[model.provider]
        params: dict[str, Any] = {
            "model": f"{provider.api}/{model.upstream}",
            "api_base": provider.base_url,
            "api_key": f"os.environ/{provider.key_env}" if provider.key_env else "none",
        }
        info = {
            "id": deployment_id(alias),
            "input_cost_per_token": model.price.input / 1e6,
            "output_cost_per_token": model.price.output / 1e6,
            "cache_read_input_token_cost": model.price.cached_input / 1e6,
        }
        entries.append({"model_name": alias, "litellm_params": params, "model_info": info})
    return {
        "model_list": entries,
        "litellm_settings": {
            "callbacks": f"{HOOK_MODULE}.handler",
            "modify_params": True,
            "drop_params": config.drop_params,
            "num_retries": 0,
            "request_timeout": config.request_timeout_s,
        },
        "general_settings": {
            "custom_auth": f"{HOOK_MODULE}.authenticate",
            "master_key": f"os.environ/{MASTER_KEY_ENV}",
            "disable_spend_logs": True,
        },
    }


def hook_settings(
    config: LlmConfig, aliases: list[str], *, direct_path: bool = True
) -> dict[str, Any]:
    """``gateway.json``: what the callback and the guard read (prices, upstream names,
    deployments, key variables, routes, the bare names served on the native routes, request
    size limit, and, with ``direct_path``, every alias with its provider's protocol, base URL
    and key variable, for the calls the guard forwards itself: :mod:`rexmle.llm.fast_path`,
    :mod:`rexmle.llm.native_fast`).
    """
    models = config.aliases()
    protocols = {
        alias.removeprefix(ALIAS_PREFIX): config.providers[models[alias].provider].api
        for alias in aliases
    }
    return {
        "prices": {alias: models[alias].price.model_dump() for alias in aliases},
        "upstream_models": {alias: models[alias].upstream for alias in aliases},
        "deployments": {deployment_id(alias): alias for alias in aliases},
        "key_env": config.key_variables(),
        "allowed_routes": list(ALLOWED_ROUTES),
        "native_names": native_names(protocols, ALIAS_PREFIX),
        "max_request_bytes": int(config.max_request_mb * 1024 * 1024),
        "hold_max_s": config.request_timeout_s,
        "drop_params": config.drop_params,
        "fast_models": {
            alias: {
                "api": config.providers[models[alias].provider].api,
                "api_base": config.providers[models[alias].provider].base_url,
                "key_env": config.providers[models[alias].provider].key_env,
            }
            for alias in aliases
            if direct_path
        },
    }
