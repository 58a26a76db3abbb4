"""Run ``aide`` with its Gemini back-end pointed at the LLM gateway (run inside AIDE's
environment: ``python aide_gemini.py <aide arguments>``).

aideml 0.2.2's Gemini back-end sends OpenAI chat completions to Google's OpenAI-compatible
endpoint, whose URL is written into its client set-up; this program replaces only that set-up,
with the same client (the ``openai`` SDK, no retries) on ``REXMLE_GEMINI_OPENAI_BASE_URL`` (the
gateway's ``/v1beta/openai/``) with ``GEMINI_API_KEY`` (the run's token), then starts AIDE's
own command line. The back-end's requests, tool calls and parsing stay AIDE's. The adapters'
folder (this program's own, first on ``sys.path``) is left off the import path: its ``aide.py``
would hide AIDE's package.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

BASE_URL_VARIABLE = "REXMLE_GEMINI_OPENAI_BASE_URL"


def main() -> None:
    """Patch the Gemini client set-up, then run ``aide`` with this program's arguments."""
    here = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    import openai
    from aide import run as aide_run
    from aide.backend import backend_gemini

    base_url = os.environ[BASE_URL_VARIABLE]
    api_key = os.environ["GEMINI_API_KEY"]

    def setup_gateway_client() -> None:
        if backend_gemini._client is None:
            backend_gemini._client = openai.OpenAI(
                api_key=api_key, base_url=base_url, max_retries=0
            )

    backend_gemini._setup_gemini_client = setup_gateway_client
    sys.argv = ["aide", *sys.argv[1:]]
    aide_run.run()


if __name__ == "__main__":
    main()
