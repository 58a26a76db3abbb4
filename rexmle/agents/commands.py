"""``rexmle agents list``, ``install AGENT`` and ``fetch-study-texts`` (added by :func:`register`)."""

import json
from pathlib import Path
from typing import Annotated

import typer

from rexmle.errors import RexmleError
from rexmle.terminal import console

out = console()
err = console(stderr=True)

agents_app = typer.Typer(
    help="Agents: the declared ones, LLM agents' locked environments, the study's prompt texts."
)


def _fail(error: Exception) -> typer.Exit:
    err.print(f"[bold red]error:[/] {error}", highlight=False)
    return typer.Exit(2)


@agents_app.command("list")
def list_agents(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per agent.")] = False,
) -> None:
    """Every agent: kind, models, steps, selection policy, time limit, and its environment."""
    from rexmle.agents.environments import resolve_env
    from rexmle.agents.registry import all_agents

    rows: list[dict[str, object]] = []
    for spec in all_agents().values():
        row: dict[str, object] = {
            "id": spec.id,
            "kind": spec.kind,
            "time_limit_s": spec.time_limit_s,
            "network": spec.network,
            "description": spec.description,
        }
        if spec.llm is not None:
            env = resolve_env(spec.llm.environment)
            row |= {
                "models": dict(spec.llm.models),
                "steps": spec.llm.steps,
                "selection": spec.llm.selection,
                "scenario": spec.llm.scenario,
                "environment": env.name,
                "variant": env.variant,
                "lock_hash": env.lock_hash,
                "installed": env.is_installed(),
                "path": str(env.root),
            }
        rows.append(row)
    if as_json:
        for row in rows:
            out.print_json(json.dumps(row))
        return
    from rich.table import Table

    table = Table(title="agents")
    for column in ("id", "kind", "models", "steps", "selection", "time limit", "environment"):
        table.add_column(column, no_wrap=column in ("id", "kind"))
    for row in rows:
        models = row.get("models")
        state = "-"
        if "environment" in row:
            flag = "installed" if row["installed"] else "not installed"
            state = f"{row['environment']} ({row['variant']}, {str(row['lock_hash'])[:12]}) {flag}"
        table.add_row(
            str(row["id"]),
            str(row["kind"]),
            ", ".join(f"{k}={v}" for k, v in models.items()) if isinstance(models, dict) else "-",
            "-" if row.get("steps") is None else str(row["steps"]),
            str(row.get("selection") or "-")
            + (f" ({row['scenario']})" if row.get("scenario") else ""),
            f"{float(str(row['time_limit_s'])):g} s",
            state,
        )
    out.print(table, width=max(out.width, 120))


@agents_app.command("install")
def install(
    agent: Annotated[str, typer.Argument(help="aide, ml-master or rdagent (or an agent id).")],
    variant: Annotated[
        str | None, typer.Option("--variant", help="Torch build: cpu or cuda (default: detected).")
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option("--source", help="Local clone, mirror or folder of the agent's source."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Reinstall even when stamped.")] = False,
    offline: Annotated[
        bool, typer.Option("--offline", help="No package index: pip's find-links folders only.")
    ] = False,
) -> None:
    """Install an agent's locked environment (idempotent: a stamped install is kept).

    The agents cache ($REXMLE_AGENTS_DIR, else ~/.cache/rexmle-agents) must be where sandboxes
    can show it: not under /tmp or /var/tmp, the data root or the runs root.
    """
    from rexmle.agents.environments import (
        PYPI_INDEX,
        check_cache_location,
        env_names,
        install_env,
        resolve_env,
    )
    from rexmle.agents.registry import all_agents
    from rexmle.config import resolve_data_dir, resolve_runs_dir

    name = agent
    agents = all_agents()
    if name not in env_names() and name in agents and agents[name].llm is not None:
        name = agents[name].llm.environment  # type: ignore[union-attr]
    try:
        env = resolve_env(name, variant=variant, source=source)  # type: ignore[arg-type]
        check_cache_location(env.root.parent, (resolve_data_dir(None), resolve_runs_dir(None)))
        with err.status(f"installing {env.name} ({env.variant}) into {env.root}") as status:

            def progress(line: str) -> None:
                status.update(f"{env.name}: {line[:110]}")

            result = install_env(
                env,
                source=source,
                force=force,
                index_url=None if offline else PYPI_INDEX,
                progress=progress,
            )
    except RexmleError as error:
        raise _fail(error) from error
    what = "installed" if result.installed else "already installed"
    out.print(
        f"{env.name}: {what} in {result.seconds:.1f} s\n  path {env.root}\n"
        f"  lock {env.lock_file.name} sha256 {env.lock_hash}",
        highlight=False,
    )


@agents_app.command("fetch-study-texts")
def fetch_study_texts_command(
    source: Annotated[
        Path | None,
        typer.Option("--source", help="Local clone or mirror of the study's repository."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Fetch again even when verified.")] = False,
) -> None:
    """Fetch the published study's prompt texts (pinned commit, SHA-256 checked) into the cache."""
    from rexmle.agents.study_texts import fetch_study_texts, load_pins

    pins = load_pins()
    try:
        with err.status(f"fetching the study's texts ({pins.repository} @ {pins.commit[:12]})"):
            result = fetch_study_texts(pins=pins, source=source, force=force)
    except RexmleError as error:
        raise _fail(error) from error
    what = "fetched" if result.fetched else "already fetched"
    out.print(
        f"study texts: {what}, {result.n_files} files verified by SHA-256\n"
        f"  path {result.folder}\n  from {result.source} @ {pins.commit}",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    """Add the ``agents`` command group to the ``rexmle`` CLI."""
    app.add_typer(agents_app, name="agents")
