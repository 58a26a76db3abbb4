"""``rexmle llm install``: build the gateway's environment ahead of a run (CI, offline prep).
``rexmle llm standin``: the offline stand-in provider for trying agents without one.
"""

from pathlib import Path
from typing import Annotated

import typer

from rexmle.terminal import console

llm_app = typer.Typer(
    help="The LLM gateway: its environment, and an offline stand-in provider.",
    no_args_is_help=True,
)
err = console(stderr=True)


@llm_app.command("install")
def install(
    force: Annotated[bool, typer.Option("--force", help="Reinstall even when installed.")] = False,
) -> None:
    """Install the gateway's locked LiteLLM environment into the agents cache (idempotent)."""
    from rexmle.llm.environment import gateway_env, install_gateway, lock_hash

    target = gateway_env()
    if target.is_installed() and not force:
        err.print(f"gateway environment already installed: {target.root}", highlight=False)
        return
    with err.status(f"installing the gateway environment (lock {lock_hash()[:16]})…"):
        env, seconds = install_gateway(force=force)
    err.print(f"installed {env.root} in {seconds:.1f} s", highlight=False)


STANDIN_HELP = "\n\n".join(
    [
        "Serve the offline stand-in provider on 127.0.0.1:PORT until Ctrl-C.",
        "It speaks OpenAI chat completions and Responses, Anthropic messages and Gemini "
        "generateContent (streamed or not) and embeddings, and answers every call from a reply "
        "script, then with --default-text. "
        "No call leaves the machine and nothing is charged, but the gateway meters the calls "
        "with the prices of the config, so budgets act as they would with a provider.",
        "\b\n  rexmle llm standin &\n  rexmle run --agent aide --task isles22 --mini "
        '--llm-config "$(rexmle llm standin --config-path)"',
        "The shipped config (--config-path prints where it is) exposes the built-in models "
        "(gw/gpt-5, gw/claude-sonnet-4-5, gw/gemini-3-pro, gw/text-embedding-3-small) on port "
        "8765; with another --port, --config-out FILE writes that config for the port.",
        "A reply script (--script FILE.json) is a JSON list of replies, one per completion "
        "call, in order; each an object with any of: text, tool_calls (a list of {name, "
        "arguments}), input_tokens, output_tokens (default: counted as words), cached_tokens, "
        "reasoning_tokens, status (an HTTP error status such as 429 answers with the "
        "provider's error body), error, delay_s, hang (never answer). Example:",
        '\b\n  [{"text": "hello"},\n   {"tool_calls": [{"name": "submit", "arguments": '
        '{"path": "submission.csv"}}]},\n   {"status": 429, "error": "slow down"}]',
    ]
)


@llm_app.command("standin", help=STANDIN_HELP)
def standin(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: a free one).")] = 8765,
    script: Annotated[
        Path | None, typer.Option(help="JSON list of replies, answered in order.")
    ] = None,
    default_text: Annotated[str, typer.Option(help="The reply once the script is used up.")] = "ok",
    api_key: Annotated[
        list[str] | None,
        typer.Option(help="Accept only calls with this key (repeatable; default: any)."),
    ] = None,
    config_path: Annotated[
        bool, typer.Option("--config-path", help="Print the shipped LLM config's path and exit.")
    ] = False,
    config_out: Annotated[
        Path | None, typer.Option(help="Write the LLM config for the bound port to this file.")
    ] = None,
) -> None:
    """The offline stand-in provider (see STANDIN_HELP)."""
    from rexmle.llm.standin import (
        Reply,
        ScriptedUpstream,
        load_script,
        serve,
        standin_config_path,
        standin_config_text,
    )

    if config_path:
        typer.echo(standin_config_path())
        return
    try:
        replies = load_script(script) if script is not None else []
    except (OSError, ValueError, TypeError) as error:
        err.print(f"[red]error:[/] reply script {script}: {error}", highlight=False)
        raise typer.Exit(2) from error
    upstream = ScriptedUpstream(
        replies,
        default=Reply(text=default_text),
        api_keys=set(api_key) if api_key else None,
        port=port,
    )

    def ready(base_url: str) -> None:
        bound = int(base_url.rsplit(":", 1)[1])
        if config_out is not None:
            config_out.write_text(standin_config_text(bound), encoding="utf-8")
            where = str(config_out)
        elif bound == 8765:
            where = str(standin_config_path())
        else:
            where = f"rexmle llm standin --port {bound} --config-out FILE writes one"
        typer.echo(f"listening on {base_url} (OpenAI-compatible at {base_url}/v1)")
        typer.echo(f"LLM config: {where}")

    try:
        serve(upstream, ready)
    except OSError as error:
        err.print(f"[red]error:[/] cannot serve on 127.0.0.1:{port}: {error}", highlight=False)
        raise typer.Exit(1) from error


def register(app: typer.Typer) -> None:
    """Add ``llm`` to the ``rexmle`` CLI."""
    app.add_typer(llm_app, name="llm")
