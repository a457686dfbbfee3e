"""The documents stay true to the code: docs/tools.md is what the registry says, README names every tool and
stays short, and every relative link in README.md and docs/ leads to a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

from oracle_server.registry import reference
from oracle_server.registry.tools import TOOLS

PROJECT = Path(__file__).resolve().parents[2]
README = PROJECT / "README.md"
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


def test_tools_reference_is_generated_from_the_registry():
    assert reference.PAGE.read_text(encoding="utf-8") == reference.tools_reference(), (
        "docs/tools.md is out of date: run `python -m oracle_server.registry.reference` (or `make docs`)")
    assert reference.main(["--check"]) == 0


def test_the_reference_names_every_parameter_of_every_tool():
    page = reference.PAGE.read_text(encoding="utf-8")
    for tool in TOOLS:
        section = page.split(f"## {tool.name}\n", 1)[1].split("\n## ", 1)[0]
        assert f"`{tool.http.method} {tool.http.path}`" in section
        for name in tool.request.model_fields:
            assert f"| `{name}` |" in section, f"{tool.name}: {name} missing from docs/tools.md"


def test_a_changed_registry_fails_the_check():
    assert reference.tools_reference(TOOLS[:-1]) != reference.PAGE.read_text(encoding="utf-8")


def test_readme_is_short_and_names_every_tool_once_in_its_table():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    table = [m.group(1) for m in re.finditer(r"^\| `(oracle_\w+)` \|", text, flags=re.M)]
    assert table == [t.name for t in TOOLS]


def test_every_relative_link_leads_to_a_file():
    broken = []
    for page in [README, PROJECT / "BENCHMARKS.md", *sorted((PROJECT / "docs").glob("*.md"))]:
        for match in LINK.finditer(page.read_text(encoding="utf-8")):
            target = match.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(PROJECT)}: {target}")
    assert broken == []
