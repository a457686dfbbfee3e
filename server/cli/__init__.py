"""The `oracle` command (commands.py), its commands derived from the registry (spec.py), its fast path through a
running server (remote.py) and `oracle init`'s report (init.py; the survey is services/init.py). The top of the stack:
it may import every package, as it starts the servers.
"""


def main(argv: list[str] | None = None) -> int:
    """The `oracle` entry point (pyproject.toml). Imports the commands only when called, so that importing
    `oracle_server.cli.spec` or `oracle_server.cli.remote` stays cheap."""
    from oracle_server.cli.commands import main as run

    return run(argv)
