"""Every `oracle` subcommand's --help prints (the parser built from the registry, in-process): a description with a
literal % (consult's "15% of context_window") crashed argparse's help formatting."""

from __future__ import annotations

import argparse

import pytest

from oracle_server.cli.commands import build_parser


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("command", sorted(_subcommands(build_parser())))
def test_every_subcommand_prints_its_help(command: str) -> None:
    sub = _subcommands(build_parser())[command]
    text = sub.format_help()
    assert text.startswith(f"usage: oracle {command}")


def test_a_literal_percent_in_a_description_is_printed_as_written() -> None:
    assert "15% of" in _subcommands(build_parser())["consult"].format_help()
