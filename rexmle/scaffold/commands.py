"""``rexmle dev``: commands for people adding to the benchmark (not for running it)."""

from typing import Annotated

import typer

dev_app = typer.Typer(
    help="Developer tools: scaffold a new challenge family.", no_args_is_help=True
)


@dev_app.command("new-challenge")
def new_challenge_command(
    name: Annotated[str, typer.Argument(help="Family folder name (a Python identifier).")],
    tasks: Annotated[int, typer.Option("--tasks", help="Number of tasks.", min=1)] = 1,
) -> None:
    """Scaffold rexmle/challenges/NAME/: YAML, leaderboard, description and plain functions."""
    from rexmle.scaffold.family import new_challenge, task_ids

    written = new_challenge(name, n_tasks=tasks)
    for path in written:
        typer.echo(f"wrote {path}")
    first = task_ids(name, tasks)[0]
    typer.echo(
        f"next: rexmle prepare {first} --mini && rexmle grade {first} <data-dir>/{first}/"
        f"private/gold; then replace the synthetic facts (README, 'Contributing: adding a challenge')"
    )


def register(app: typer.Typer) -> None:
    """Add ``dev`` to the ``rexmle`` CLI."""
    app.add_typer(dev_app, name="dev")
