"""The CLI baseline: a minimal typer app with one command.

Same typer settings as `meith` (no rich markup, no completion install), so the comparison
isolates what meith's commands add on top of typer itself.
"""

import typer

app = typer.Typer(add_completion=False, rich_markup_mode=None)


@app.command()
def hello(name: str = "world") -> None:
    """Print a greeting."""
    typer.echo(f"hello {name}")


if __name__ == "__main__":
    app()
