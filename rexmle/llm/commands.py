"""``rexmle llm install``: build the gateway's environment ahead of a run (CI, offline prep)."""

from __future__ import annotations

from typing import Annotated

import typer

from rexmle.terminal import console

llm_app = typer.Typer(help="The LLM gateway: its environment.", no_args_is_help=True)
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


def register(app: typer.Typer) -> None:
    """Add ``llm`` to the ``rexmle`` CLI."""
    app.add_typer(llm_app, name="llm")
