"""Start the LiteLLM proxy with the gateway's guard and settings (run by the gateway's own
interpreter, not by the harness).

Copied into the gateway's state folder as ``gateway_launch.py`` and run as ``python
gateway_launch.py <litellm CLI arguments>``: LiteLLM's own command line, except that uvicorn
serves :mod:`rexmle.llm.proxy_guard`'s app (LiteLLM's app behind the request-size limit and the
header filter) without an access log line per request, that LiteLLM's per-request attempt to
import the OpenTelemetry SDK (not installed: tracing is off) fails at once instead of compiling
the module's source again on every call, and that the garbage collector is off while LiteLLM's
modules are imported (hundreds of thousands of long-lived objects; the guard turns it on again
and freezes them once the app is built, which takes about a quarter off the start).
"""

from __future__ import annotations

import gc
import importlib.util
import sys
from typing import Any

GUARD_APP = "gateway_guard:app"
MISSING_MODULES = (
    "litellm.integrations.otel.logger",
    "litellm.integrations.otel.plumbing.context",
)
"""Modules that import the OpenTelemetry SDK, which the gateway's environment does not hold."""


def main() -> None:
    """Run LiteLLM's command line with the guard as uvicorn's app."""
    if importlib.util.find_spec("opentelemetry") is None or (
        importlib.util.find_spec("opentelemetry.sdk") is None
    ):
        for name in MISSING_MODULES:
            sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    gc.disable()
    from litellm.proxy import proxy_cli

    helpers = proxy_cli.ProxyInitializationHelpers
    litellm_args = helpers.get_default_unvicorn_init_args

    def guarded_args(*args: Any, **kwargs: Any) -> dict[str, Any]:
        uvicorn_args: dict[str, Any] = dict(litellm_args(*args, **kwargs))
        uvicorn_args.update(app=GUARD_APP, access_log=False)
        return uvicorn_args

    helpers.get_default_unvicorn_init_args = staticmethod(guarded_args)
    proxy_cli.run_server()


if __name__ == "__main__":
    main()
