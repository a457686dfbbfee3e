"""The first hour of a new user, through the real `oracle` command: `oracle init` + `oracle index` on an ADR
repository and an Obsidian vault, the CLI answering through a running server (same output), stats in words,
v2's `?q=`, a broken oracle.toml, and a wheel installed into a fresh venv serving the starter knowledge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import httpx
import pytest

from _first_hour import build_adr_repo, build_obsidian_vault, write
from _procs import oracle_cmd, serve_http, stop_process

pytestmark = pytest.mark.slow
PROJECT = Path(__file__).resolve().parents[2]


def run(env: dict[str, str], *args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([*oracle_cmd(), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def env_for(root: Path, data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_") and k not in ("LANGUAGE", "LC_ALL")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(data), LANG="en_US.UTF-8")  # init keeps the user's language
    return env


def test_an_adr_repository_indexes_with_init_and_index_each_note_once(tmp_path):
    root, data = tmp_path / "adr", tmp_path / "data"
    expected = build_adr_repo(root)
    env = env_for(root, data)
    before = run(env, "index")
    assert "notes: 0 added" in before.stdout
    assert "not indexed (no type): 14 files: locales/ 12, (root) 2" in before.stdout  # one short line, not 230 folders
    assert len(before.stdout.splitlines()) <= 10

    init = run(env, "init", str(root))
    # one language of locales/{en,fr,ja}: the user's (LANG=en_US), the others one deletable exclude line each
    english = expected["notes"] - 2 * (1 + 3)
    assert "languages in locales/: indexing en/, your language (en: from the environment)" in init.stdout
    # decisions (Context/Decision headings) as principles; the two root files as generic notes (issue 40)
    assert f"will index {english} notes (2 note, {english - 2} principle)" in init.stdout
    assert "type: locales/ (4) -> principle: decisions (ADRs), 3 of 4 files look like ADRs" in init.stdout
    assert "symlinks to notes indexed under their real name: 4" in init.stdout
    assert (root / "oracle.toml").is_file() and 'default_type = "note"' in (root / "oracle.toml").read_text()
    assert run(env, "init", str(root), check=False).returncode == 2  # never overwrites without --force

    after = run(env, "index")
    assert f"notes: {english} added" in after.stdout and len(after.stdout.splitlines()) <= 10
    listing = run(env, "search", "Kafka topic partitions", "--limit", "50", "--group-by-file", "--json").stdout
    files = [hit["source_file"] for hit in json.loads(listing)["hits"]]
    assert "locales/en/decisions/adopt-kafka/index.md" in files
    assert not any((root / f).is_symlink() for f in files)  # never a README.md -> index.md second copy
    stats = json.loads(run(env, "stats", "--json").stdout)
    assert stats["files"]["total"] == english and stats["drift"]["in_sync"]
    assert stats["drift"]["symlink_aliases"] == 4 and stats["drift"]["unmapped_folders"] == {}


def test_an_obsidian_vault_indexes_with_init_links_and_aliases(tmp_path):
    root, data = tmp_path / "vault", tmp_path / "data"
    expected = build_obsidian_vault(root)
    env = env_for(root, data)
    init = run(env, "init", str(root))
    assert f"will index {expected['notes']} notes (4 note, 3 retro)" in init.stdout
    assert '"Daily" = "retro"' in (root / "oracle.toml").read_text()
    run(env, "index")
    hits = json.loads(run(env, "search", "Lizard uploader", "--mode", "fts", "--json").stdout)["hits"]
    assert hits and hits[0]["source_file"] == "Projects/Gecko.md"  # found by its alias alone
    for token in ("zebra-obsidian-token", "zebra-trash-token"):
        assert json.loads(run(env, "search", token, "--mode", "fts", "--json").stdout)["total"] == 0
    proc, url = serve_http(env, tmp_path, tmp_path / "serve.log", "--no-watch")
    try:
        rel = httpx.get(url + "/api/relations", params={"predicate": "links_to", "limit": 50}, timeout=60).json()
        triples = {(r["subject"], r["object"]) for r in rel["relations"]} if "relations" in rel else {
            (r["subject"], r["object"]) for r in rel["items"]}
        assert {("Gecko", "Object store"), ("Gecko", "Queue"), ("Welcome", "Projects/Gecko"),
                ("Welcome", "Reading list")} <= triples
        assert ("Gecko", "Not a link") not in triples
    finally:
        stop_process(proc)


def test_the_cli_answers_through_a_running_server_with_the_same_output(tmp_path):
    root, data = tmp_path / "vault", tmp_path / "data"
    build_obsidian_vault(root)
    env = env_for(root, data)
    run(env, "init", str(root))
    run(env, "index")
    local = json.loads(run(env, "search", "gecko uploader", "--json").stdout)
    local_stats = run(env, "stats").stdout
    assert "None" not in local_stats and "True" not in local_stats and "False" not in local_stats
    assert "usage: 1 searches (cli p50" in local_stats  # a CLI process on its own is its own series

    proc, url = serve_http(env, tmp_path, tmp_path / "serve.log", "--no-watch")
    try:
        record = json.loads((data / "server.json").read_text())
        assert record["port"] == int(url.rsplit(":", 1)[1]) and record["root"] == str(root.resolve())
        remote = json.loads(run(env, "search", "gecko uploader", "--json").stdout)
        for result in (local, remote):
            result["meta"].pop("took_ms")
        assert remote == local
        human_remote = run(env, "search", "gecko uploader").stdout.splitlines()[1:]
        human_local = run(env, "--local", "search", "gecko uploader").stdout.splitlines()[1:]
        assert human_remote == human_local
        stats = json.loads(run(env, "stats", "--json").stdout)
        by = stats["usage"]["search_latency_by_process"]
        assert by["server"]["samples"] == 2 and by["cli"]["samples"] == 2  # two through the server, two alone
        bad = run(env, "search", "x", "--limit", "1000", check=False)
        assert bad.returncode == 2 and "limit" in bad.stderr
        v2 = httpx.get(url + "/api/search", params={"q": "gecko uploader", "mode": "fts"}, timeout=60).json()
        v3 = httpx.get(url + "/api/search", params={"query": "gecko uploader", "mode": "fts"}, timeout=60).json()
        assert v2["hits"] == v3["hits"] and v2["total"] > 0
    finally:
        stop_process(proc)
    assert not (data / "server.json").exists()  # a stopped server takes its record with it
    assert json.loads(run(env, "search", "gecko uploader", "--json").stdout)["total"] == local["total"]


def test_a_broken_oracle_toml_stops_the_cli_naming_file_and_line(tmp_path):
    root = tmp_path / "kb"
    write(root / "notes/a.md", "# a\n")
    write(root / "oracle.toml", '[index]\ndefault_type = "learning"\n\n[types]\n"notes" = "lesson"\n')
    proc = run(env_for(root, tmp_path / "data"), "index", check=False)
    assert proc.returncode == 2
    assert f"{root / 'oracle.toml'}:5" in proc.stderr and "'lesson' is not a type" in proc.stderr


def test_a_wheel_in_a_fresh_venv_serves_the_starter_knowledge(tmp_path):
    """Build the wheel, install it (without its dependencies, which come from this venv: offline) into a new
    venv, and run it from an empty folder: no checkout anywhere on its path."""
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(PROJECT), "--no-deps", "--no-build-isolation",
                            "-v", "-w", str(dist)], check=True, capture_output=True, text=True, timeout=600)
    # Issue 27: the build warned that the license table is deprecated and that data folders were not packages.
    assert "BuildBackendWarning" not in built.stdout + built.stderr and "deprecated" not in built.stdout + built.stderr
    venv = tmp_path / "venv"
    # Without a pip of its own (ensurepip costs seconds): this venv's pip installs into it (`--python`).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    wheel = next(dist.glob("oracle_memory-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, timeout=300)
    site = Path(subprocess.check_output([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        text=True).strip())
    (site / "deps-from-test-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # not its .pth files
    home = tmp_path / "home"
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "XDG_DATA_HOME": str(home / "share")}
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    oracle = str(venv / "bin" / "oracle")
    where = subprocess.run([str(py), "-c", "import oracle_server; print(oracle_server.__file__)"], env=env, cwd=cwd,
                           capture_output=True, text=True, check=True).stdout
    assert str(site) in where and str(PROJECT) not in where
    # The wheel installs no top-level `server` or `indexer` that could shadow (or be shadowed by) another package's.
    for name in ("server", "indexer"):
        assert subprocess.run([str(py), "-c", f"import {name}"], env=env, cwd=cwd, capture_output=True).returncode == 1
    index = subprocess.run([oracle, "index"], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert index.returncode == 0, index.stderr
    starter = home / "share" / "oracle" / "knowledge"
    assert "starter knowledge copied to" in index.stderr and (starter / "learnings").is_dir()
    # Its own README is not a note, and the first index does not ask the user to map it (issue 27).
    assert (starter / "oracle.toml").is_file() and "not indexed" not in index.stdout + index.stderr
    found = subprocess.run([oracle, "search", "quote fts5 search terms", "--mode", "fts", "--json"], env=env,
                           cwd=cwd, capture_output=True, text=True, timeout=300)
    result = json.loads(found.stdout)
    assert result["total"] > 0 and result["hits"][0]["source_file"].startswith("learnings/")
    # Vectors in one step (issue 24): the model's tokenizer is inside the wheel, no second package to inject.
    with zipfile.ZipFile(wheel) as archive:
        assert "oracle_indexer/models/minilm/tokenizer.json" in archive.namelist()
    meaning = subprocess.run([oracle, "search", "how should search words be escaped", "--mode", "vector", "--json"],
                             env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    by_meaning = json.loads(meaning.stdout)
    assert by_meaning["meta"]["mode"] == "vector" and by_meaning["hits"], meaning.stderr
    assert not any("unavailable" in w for w in by_meaning["meta"]["warnings"])
    stats = json.loads(subprocess.run([oracle, "stats", "--json"], env=env, cwd=cwd, capture_output=True,
                                      text=True, timeout=300).stdout)
    assert stats["root"] == str(starter) and stats["files"]["total"] == len(list(starter.rglob("*.md"))) - 1
