"""Fuzzing every MCP tool and every HTTP route of real server processes with hostile input.

Nothing here names a tool or a route: the tools come from a real MCP `tools/list` (each tool's inputSchema
drives the generator) and the routes from the real `/openapi.json`, so a tool or route added later is fuzzed
without a change to this file. Two real processes, each on its own throwaway copy of a few bundled notes
(every write lands in pytest's tmp dir, never in knowledge/):
- `oracle serve` over stdio, driven by the SDK client through one session for the whole module;
- `oracle serve --http --port P`, driven by httpx.

Inputs: arbitrary Unicode (bidi controls, combining marks, Thai, emoji, lone surrogates where JSON carries
them), control characters and NUL, strings up to and past every declared maximum, wrong JSON types, missing
required and unknown extra fields, FTS5 syntax, and (HTTP) broken percent-encoding and broken JSON bodies.

Properties:
- MCP: a success validates against the tool's outputSchema; an error is a tool error whose text is a message
  (never the SDK's bare "Error executing tool X" that stands for an unhandled exception, never a traceback)
  and names the field that was wrong;
- HTTP: never a 5xx; a 2xx validates against the route's response schema; a 4xx is a JSON `error` that
  names the bad field;
- afterwards both servers still answer a normal search, logged no traceback, and knowledge/ is untouched.

Hypothesis runs derandomized, so CI sees the same examples every time.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import time
import traceback
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from _hostile import any_text, hostile_text, json_values
from _mcp import KB, Session, index_kb
from _procs import oracle_cmd, serve_http, stop_process

PROJECT = Path(__file__).resolve().parents[2]
BUNDLED = PROJECT / "knowledge"
START_TIMEOUT = 120.0
CALL_TIMEOUT = 120.0
VALID_EXAMPLES = 25  # per tool and per route: valid-shaped inputs (right JSON types, any values)
INVALID_EXAMPLES = 25  # per tool and per route: one field of the wrong type, missing, unknown or mis-encoded
RAW_EXAMPLES = 40  # raw JSON-RPC frames over stdio
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")
PROC = settings(
    deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)

CANARY = "quokkafuzzcanary"
CANARY_FILE = "learnings/2026-01-01_fuzz-canary.md"
CORPUS = [
    "learnings/2026-01-14_quote-fts5-search-terms.md",
    "learnings/2026-02-03_search-memory-before-starting.md",
    "learnings/2026-08-04_supersede-stale-learning.md",
    "principles/treat-input-as-hostile.md",
    "principles/cite-your-sources.md",
    "principles/supersede-stale-notes.md",
    "retrospectives/2026-03-31_hybrid-search-first-release.md",
]
EXTRA_NOTES = {
    CANARY_FILE: f"---\ntitle: The fuzz canary\ntags: [fuzz]\n---\n\n# The fuzz canary\n\n"
                 f"The word {CANARY} appears only here, so a search for it after the fuzzing proves the server "
                 f"still serves.\n",
    "learnings/2026-01-02_thai-and-emoji.md": "# ตลาดนัด 🎉\n\nวันนี้ฉันไปตลาดนัดกับแมวของฉัน 東京 APIの使い方 e\u0301\u200f\n",
}
ALL_TYPES = {"string", "integer", "number", "boolean", "null", "array", "object"}
WRONG_FOR_QUERY = ["abc", "", "1.5", "١", "0x10", "NaN", "-", "∞", "1e999", "true", "maybe", "[1]", "{}"]
RAW_QUERY_GARBAGE = ["%ED%A0%80", "%FF%FE", "%", "%G0", "%C0%AF", "%00", "%25%30%30", "%F0%9F%98", "+", "%2B%2B",
                     "a%", "%E0%B8", "%EF%BB%BF", "%0D%0A", "&", "=", "=="]


# =====================================================================================================
# JSON Schema -> strategies (shared by the MCP and the HTTP side)
# =====================================================================================================
def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}[type(value)]


class SchemaFuzz:
    """Strategies for one JSON Schema document (an MCP inputSchema or the OpenAPI spec, for its $refs).

    `surrogate`: strings may hold lone UTF-16 surrogates (JSON can carry them as escapes; a URL cannot).
    `known`: real ids, paths, hashes and concepts, so that tools taking an id also get ids that exist.
    """

    def __init__(self, document: dict, known: list[str], surrogate: bool) -> None:
        self.document, self.known, self.surrogate = document, known, surrogate

    def resolve(self, schema: dict) -> dict:
        while "$ref" in schema:
            node: Any = self.document
            for part in schema["$ref"].removeprefix("#/").split("/"):
                node = node[part]
            schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
        return schema

    def types(self, schema: dict) -> set[str]:
        """The JSON types a schema admits (ignoring value constraints)."""
        s = self.resolve(schema)
        if "enum" in s:
            return {json_type(v) for v in s["enum"]}
        if "const" in s:
            return {json_type(s["const"])}
        for key in ("anyOf", "oneOf"):
            if key in s:
                return set().union(*(self.types(x) for x in s[key]))
        if "allOf" in s:
            return self.types(s["allOf"][0])
        declared = s.get("type")
        if declared is None:
            return set(ALL_TYPES)
        found = {declared} if isinstance(declared, str) else set(declared)
        return found | ({"integer"} if "number" in found else set())

    def value(self, schema: dict, depth: int = 0) -> st.SearchStrategy[Any]:
        """A value of a type the schema admits; its constraints (bounds, lengths, patterns) may be broken."""
        s = self.resolve(schema)
        if "enum" in s:
            return st.sampled_from(s["enum"])
        if "const" in s:
            return st.just(s["const"])
        for key in ("anyOf", "oneOf"):
            if key in s:
                return st.one_of([self.value(x, depth) for x in s[key]])
        if "allOf" in s:
            return self.value(s["allOf"][0], depth)
        declared = s.get("type")
        if isinstance(declared, list):
            return st.one_of([self.value({**s, "type": t}, depth) for t in declared])
        if declared == "string":
            text = any_text(s.get("maxLength"), surrogate=self.surrogate, known=self.known)
            if "pattern" in s:  # mostly a match, so the request gets past validation into the service
                return st.one_of(st.from_regex(s["pattern"], fullmatch=True), st.from_regex(s["pattern"], fullmatch=True), text)
            return text
        if declared in ("integer", "number"):
            low, high = s.get("minimum", 0), s.get("maximum", 120)
            bounds = [b for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if (b := s.get(key)) is not None]
            edges = sorted({int(b) + d for b in bounds for d in (-1, 0, 1)} | {-1, 0, 2**31, 2**63, -(2**63), 10**20})
            ints = st.one_of(st.integers(int(low), int(high)), st.integers(int(low), int(high)), st.sampled_from(edges))
            if declared == "number":
                return ints | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.5, -0.0, 1e308])
            return ints
        if declared == "boolean":
            return st.booleans()
        if declared == "null":
            return st.none()
        if declared == "array":
            most = min(int(s.get("maxItems", 6)) + 2, 30)
            return st.lists(self.value(s.get("items", {}), depth + 1), max_size=most)
        if declared == "object" or "properties" in s:
            if depth > 3:
                return st.just({})
            return self.object(s, depth + 1)
        return json_values(self.surrogate)

    def object(self, schema: dict, depth: int = 0) -> st.SearchStrategy[dict]:
        s = self.resolve(schema)
        props = s.get("properties", {})
        required = [n for n in s.get("required", []) if n in props]
        return st.fixed_dictionaries(
            {n: self.value(props[n], depth) for n in required},
            optional={n: self.value(p, depth) for n, p in props.items() if n not in required},
        )

    def wrong(self, schema: dict) -> st.SearchStrategy[Any]:
        """A value of a JSON type the schema does not admit."""
        allowed = self.types(schema)
        by_type: dict[str, st.SearchStrategy[Any]] = {
            "string": hostile_text(4, self.surrogate),
            "integer": st.sampled_from([0, 7, -1, 2**63, 10**30]),
            "number": st.sampled_from([0.5, -2.5, 1e308, 3.14]),
            "boolean": st.booleans(),
            "null": st.none(),
            "array": st.lists(json_values(self.surrogate), max_size=3),
            "object": st.dictionaries(hostile_text(2), json_values(self.surrogate), max_size=3),
        }
        if "number" in allowed:
            allowed = allowed | {"integer"}
        choices = [t for t in sorted(ALL_TYPES) if t not in allowed and not (t == "integer" and "number" in allowed)]
        if not choices:
            return st.nothing()
        return st.sampled_from(choices).flatmap(lambda t: by_type[t])


@dataclass(frozen=True)
class Mutation:
    """What was done to a valid-shaped input: `kind` is valid, wrong_type, missing, extra, repeated or raw."""

    kind: str
    field: str | None = None
    must_fail: bool = False  # a container where a scalar belongs (or the reverse): no lenient reading accepts it


def mutated(fuzz: SchemaFuzz, schema: dict) -> st.SearchStrategy[tuple[dict, Mutation]]:
    """A valid-shaped object with one field made wrong, removed, or an unknown field added."""
    s = fuzz.resolve(schema)
    props = s.get("properties", {})
    required = [n for n in s.get("required", []) if n in props]

    @st.composite
    def build(draw: st.DrawFn) -> tuple[dict, Mutation]:
        args = dict(draw(fuzz.object(s)))
        kinds = ["extra"] + (["wrong_type"] * 3 if props else []) + (["missing"] if required else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "wrong_type":
            name = draw(st.sampled_from(sorted(props)))
            value = draw(fuzz.wrong(props[name]))
            allowed = fuzz.types(props[name])
            container = isinstance(value, (list, dict))
            must_fail = (container and not allowed & {"array", "object"}) or (
                isinstance(value, dict) and allowed == {"array"}) or (
                isinstance(value, list) and allowed == {"object"})
            args[name] = value
            return args, Mutation("wrong_type", name, must_fail)
        if kind == "missing":
            name = draw(st.sampled_from(required))
            args.pop(name, None)
            return args, Mutation("missing", name, True)
        name = draw(st.sampled_from(["bogus", "limt", "__proto__", "query ", "Query", "q\u200f", "x" * 300, ""]))
        name = name if name not in props else name + "_extra"
        args[name] = draw(json_values(fuzz.surrogate))
        return args, Mutation("extra", name)

    return build()


def fuzz_each(targets: dict[str, Callable[[], None]]) -> None:
    """Run every target's fuzzer; report all failing targets together rather than stopping at the first."""
    failures: dict[str, str] = {}
    for name, run in targets.items():
        try:
            run()
        except Exception as exc:  # noqa: BLE001 - collected and re-raised below as one failure
            failures[name] = "".join(traceback.format_exception(exc))[-6000:]
    assert not failures, "\n\n".join(f"==== {name} ====\n{text}" for name, text in failures.items())


def write_corpus(root: Path) -> None:
    for rel in CORPUS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(BUNDLED / rel, root / rel)
    for rel, text in EXTRA_NOTES.items():
        (root / rel).write_text(text, encoding="utf-8")


def make_kb(base: Path, seed: Path | None = None) -> KB:
    """A throwaway knowledge root (a few bundled notes plus the canary) indexed by the real `oracle index`."""
    write_corpus(base / "root")
    return index_kb(base, seed)[0]


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.relative_to(folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def bundled_before() -> dict[str, tuple[int, int]]:
    return snapshot(BUNDLED)


def assert_message(text: str) -> None:
    """An error meant for a person or a model: words, not a stack trace."""
    assert text.strip(), "empty error message"
    assert "Traceback (most recent call last)" not in text and 'File "/' not in text, text[:2000]


# =====================================================================================================
# MCP over stdio
# =====================================================================================================
@dataclass
class Tool:
    name: str
    input_schema: dict
    output_schema: dict | None


@pytest.fixture(scope="module")
def mcp_kb(tmp_path_factory: pytest.TempPathFactory, bundled_before: dict, embedding_seed: Path) -> KB:
    return make_kb(tmp_path_factory.mktemp("fuzz-mcp"), embedding_seed)


@pytest.fixture(scope="module")
def mcp(mcp_kb: KB) -> Iterator[Session]:
    session = Session(mcp_kb)
    yield session
    session.close()


@pytest.fixture(scope="module")
def tools(mcp: Session) -> list[Tool]:
    listed = mcp.list_tools().tools
    assert listed
    return [Tool(t.name, t.input_schema, t.output_schema) for t in sorted(listed, key=lambda t: t.name)]


def known_values(hits: list[dict], concepts: list[str]) -> list[str]:
    """Real ids, files, hashes and concepts (never the canary's: a fuzzed supersede must not hide it)."""
    hits = [h for h in hits if h["source_file"] != CANARY_FILE]
    values = {v for h in hits for v in (h["id"], h["source_file"], h["content_hash"], h["content_hash"][:12])}
    return sorted(values | set(concepts) | {"search", "memory", "learnings/none.md"})


@pytest.fixture(scope="module")
def mcp_known(mcp: Session) -> list[str]:
    hits = mcp.ok("oracle_search", {"query": "search memory notes input", "limit": 50, "mode": "fts"})["hits"]
    concepts = [c["concept"] for c in mcp.ok("oracle_concepts", {"limit": 20})["concepts"]]
    return known_values(hits, concepts)


VALIDATION_WORDS = ("invalid arguments", "validation error", "invalid input")


def assert_names_a_field(text: str, args: dict, known: list[str], mutation: Mutation) -> None:
    """A validation error names the field at fault: the mutated one when no lenient reading could accept it,
    else at least one field sent or declared (another field may be the one out of bounds, or a rule may tie
    two fields together: "give exactly one of id or file")."""
    def named(field: str) -> bool:  # a long name is quoted by its start only (issue 13: errors echo excerpts)
        return field in text or (len(field) > 100 and field[:80] in text)

    if mutation.must_fail and ("lone surrogate" in text or "NUL character" in text):
        # Text that is no text (issue 39), or that no store keeps (a NUL, issue 45), is refused first, before any
        # field is read, naming its own field: the mutated field's error then goes unsaid, as the request was never
        # read.
        assert any(named(f) for f in args if f.strip()), f"the surrogate error names no field sent: {text[:800]}"
    elif mutation.must_fail:
        assert named(mutation.field), f"the error does not name {mutation.field!r}: {text[:800]}"
    elif any(word in text for word in VALIDATION_WORDS):
        fields = [f if f.strip() else repr(f) for f in [*args, *known, "body"]]
        assert any(named(f) for f in fields), f"the error names none of {fields}: {text[:800]}"


def check_tool_result(mcp: Session, tool: Tool, args: dict, mutation: Mutation) -> None:
    result = mcp.call(tool.name, args)
    text = "\n".join(c.text for c in result.content if getattr(c, "text", None))
    if result.is_error:
        assert_message(text)
        bare = f"Error executing tool {tool.name}"
        assert "errors.pydantic.dev" not in text, f"a raw pydantic dump, not a message: {text[:800]}"
        assert text.strip() != bare, (
            f"{tool.name} raised an unhandled exception for {args!r:.1500}\nserver stderr:\n{mcp.stderr()[-3000:]}")
        assert_names_a_field(text, args, list(tool.input_schema.get("properties", {})), mutation)
        return
    assert not mutation.must_fail, f"{tool.name} accepted {mutation} in {args!r:.1500}"
    assert text.strip(), f"{tool.name} returned no text content"
    if tool.output_schema:
        assert result.structured_content is not None, f"{tool.name} returned no structured content"
        jsonschema.validate(result.structured_content, tool.output_schema)


def test_every_tool_has_schemas_to_fuzz(tools: list[Tool]) -> None:
    assert len(tools) >= 7
    for tool in tools:
        assert tool.input_schema.get("type") == "object", tool.name
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        if tool.output_schema:
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)


def test_mcp_tools_valid_shaped_inputs(mcp: Session, tools: list[Tool], mcp_known: list[str]) -> None:
    """Right JSON types, hostile values: a result that validates, or a clear tool error."""

    def fuzzer(tool: Tool) -> Callable[[], None]:
        fuzz = SchemaFuzz(tool.input_schema, mcp_known, surrogate=False)  # the SDK client cannot send surrogates

        @settings(PROC, max_examples=VALID_EXAMPLES)
        @given(fuzz.object(tool.input_schema))
        def run(args: dict) -> None:
            check_tool_result(mcp, tool, args, Mutation("valid"))

        return run

    fuzz_each({tool.name: fuzzer(tool) for tool in tools})


def test_mcp_tools_invalid_inputs(mcp: Session, tools: list[Tool], mcp_known: list[str]) -> None:
    """Wrong types, missing required fields, unknown fields: a tool error naming the field, never a crash."""

    def fuzzer(tool: Tool) -> Callable[[], None]:
        fuzz = SchemaFuzz(tool.input_schema, mcp_known, surrogate=False)

        @settings(PROC, max_examples=INVALID_EXAMPLES)
        @given(mutated(fuzz, tool.input_schema))
        def run(case: tuple[dict, Mutation]) -> None:
            check_tool_result(mcp, tool, *case)

        return run

    fuzz_each({tool.name: fuzzer(tool) for tool in tools})


def test_argument_type_errors_read_like_the_tools_own(mcp: Session) -> None:
    """Found by fuzzing: the SDK's own type check answered with pydantic's multi-line dump (input values,
    error codes, documentation URLs); now it reads like every other argument error."""
    assert mcp.error("oracle_search", {"query": 5}) == (
        "Error executing tool oracle_search: invalid arguments: query: Input should be a valid string")
    assert mcp.error("oracle_search", {}) == "Error executing tool oracle_search: invalid arguments: query: Field required"
    assert mcp.error("oracle_list", {"limit": "abc"}) == (
        "Error executing tool oracle_list: invalid arguments: limit: Input should be a valid integer, unable to parse "
        "string as an integer")


@pytest.mark.parametrize("name", ["oracle_nope", "", "oracle_search ", "ORACLE_SEARCH", "oracle_search\x00", "🎉"])
def test_unknown_tool_is_a_clear_error(mcp: Session, name: str) -> None:
    result = mcp.call(name, {"query": "x"})
    assert result.is_error
    assert "Unknown tool" in result.content[0].text


def test_list_offset_past_sqlite_integers_is_a_clear_error(mcp: Session) -> None:
    """Found by fuzzing: oracle_list had no upper bound on offset; 2**63 reached SQLite (OverflowError)."""
    assert "offset" in mcp.error("oracle_list", {"offset": 2**63})
    assert "offset" in mcp.error("oracle_list", {"offset": 10**20})


def test_mcp_server_still_serves(mcp: Session, mcp_kb: KB, bundled_before: dict) -> None:
    hits = mcp.ok("oracle_search", {"query": CANARY})["hits"]
    assert CANARY_FILE in [h["source_file"] for h in hits]
    assert mcp.starts == 1, "the stdio server was restarted: it died during the fuzzing"
    log = mcp.stderr_path.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log and "unexpected exception" not in log, log[-3000:]
    assert snapshot(BUNDLED) == bundled_before, "the fuzzing wrote into the bundled knowledge/ folder"


# -- raw JSON-RPC frames over stdio: what the SDK client cannot send -------------------------------------
class RawStdio:
    """`oracle serve` spoken to line by line, so frames can be broken JSON or carry lone surrogate escapes."""

    def __init__(self, kb: KB) -> None:
        self.stderr = open(kb.logs_dir / "raw-stdio.stderr", "w", encoding="utf-8")
        self.proc = subprocess.Popen([*oracle_cmd(), "serve", "--standalone"], env=kb.env, cwd=kb.logs_dir, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr)
        self.buffer = b""
        self.next_id = 1000
        init = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "fuzz-raw", "version": "1"}})
        assert "result" in init, init
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data.replace(b"\n", b" ") + b"\n")
        self.proc.stdin.flush()

    def send(self, frame: object) -> None:
        # ensure_ascii: lone surrogates travel as \ud800 escapes, exactly what a JSON sender may emit
        self.send_bytes(json.dumps(frame, ensure_ascii=True).encode())

    def read_until(self, want_id: int | str, timeout: float = CALL_TIMEOUT) -> tuple[dict, list[dict]]:
        """(the response to want_id, every other message that arrived before it)."""
        assert self.proc.stdout is not None
        others: list[dict] = []
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                if line.strip():
                    message = json.loads(line)
                    if message.get("id") == want_id:
                        return message, others
                    others.append(message)
            left = deadline - time.monotonic()
            assert left > 0 and self.proc.poll() is None, f"no answer to request {want_id}; exit code {self.proc.poll()}"
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                assert chunk, "the server closed its stdout"
                self.buffer += chunk

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.read_until(self.next_id)[0]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            stop_process(self.proc)
        self.stderr.close()


@pytest.fixture(scope="module")
def raw_stdio(mcp_kb: KB) -> Iterator[RawStdio]:
    raw = RawStdio(mcp_kb)
    yield raw
    raw.close()


def check_raw_reply(message: dict) -> None:
    if "error" in message:
        assert isinstance(message["error"].get("message"), str) and message["error"]["message"].strip(), message
        assert_message(message["error"]["message"])
        return
    result = message.get("result", {})
    if result.get("isError"):
        text = "\n".join(c.get("text", "") for c in result.get("content", []))
        assert_message(text)
        assert not re.fullmatch(r"Error executing tool \S*", text.strip()), f"unhandled exception: {message}"


def raw_frames(tool_names: list[str]) -> st.SearchStrategy[bytes]:
    call = st.fixed_dictionaries({
        "jsonrpc": st.just("2.0") | json_values(True),
        "id": st.integers(1, 999) | st.just(None) | hostile_text(2, True) | json_values(True),
        "method": st.just("tools/call") | st.sampled_from(["tools/list", "ping", "initialize", "nope"]) | hostile_text(2, True),
        "params": st.fixed_dictionaries({
            "name": st.sampled_from(tool_names) | hostile_text(2, True) | json_values(True),
            "arguments": json_values(True) | st.dictionaries(hostile_text(2, True), json_values(True), max_size=4),
        }) | json_values(True),
    })
    as_json = (call | json_values(True)).map(lambda frame: json.dumps(frame, ensure_ascii=True).encode())
    broken = st.sampled_from([b"", b"{", b"not json", b"\xff\xfe\x00", b'{"jsonrpc":"2.0","id":5,"method":"ping"',
                              b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}', b"[" * 5000 + b"]" * 5000,
                              b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"oracle_search",'
                              b'"arguments":{"query":"' + b"x" * 300_000 + b'"}}}'])
    return st.one_of(as_json, as_json, broken)


def test_raw_stdio_frames_never_stop_the_server(raw_stdio: RawStdio, tools: list[Tool]) -> None:
    """Broken JSON, lone surrogate escapes, wrong JSON-RPC shapes: the next ping is answered every time.

    The SDK's stdio transport drops a line it cannot parse without answering (JSON-RPC would send -32700);
    what matters here is that the server neither dies nor stops answering, and any answer it gives is sane.
    """

    @settings(PROC, max_examples=RAW_EXAMPLES)
    @given(raw_frames([t.name for t in tools]))
    def run(frame: bytes) -> None:
        raw_stdio.send_bytes(frame)
        raw_stdio.next_id += 1
        ping = f"fuzz-ping-{raw_stdio.next_id}"
        raw_stdio.send({"jsonrpc": "2.0", "id": ping, "method": "ping"})
        reply, others = raw_stdio.read_until(ping)
        assert reply.get("result") == {}, reply
        for message in others:
            check_raw_reply(message)

    run()
    found = raw_stdio.request("tools/call", {"name": "oracle_search", "arguments": {"query": CANARY}})
    assert CANARY_FILE in json.dumps(found["result"]["structuredContent"])


# =====================================================================================================
# HTTP
# =====================================================================================================
@dataclass
class Http:
    url: str
    kb: KB
    proc: subprocess.Popen
    stderr_path: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


@dataclass
class Route:
    method: str
    path: str
    operation: dict

    @property
    def name(self) -> str:
        return f"{self.method.upper()} {self.path}"

    def params(self, where: str) -> list[dict]:
        return [p for p in self.operation.get("parameters", []) if p["in"] == where]

    @property
    def body_schema(self) -> dict | None:
        content = self.operation.get("requestBody", {}).get("content", {})
        return content.get("application/json", {}).get("schema")


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory, bundled_before: dict, embedding_seed: Path) -> Iterator[Http]:
    kb = make_kb(tmp_path_factory.mktemp("fuzz-http"), embedding_seed)
    stderr_path = kb.logs_dir / "serve-http.stderr"
    proc, url = serve_http(kb.env, kb.logs_dir, stderr_path, timeout=START_TIMEOUT)
    server = Http(url, kb, proc, stderr_path)
    try:
        yield server
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def client(http: Http) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=http.url, timeout=CALL_TIMEOUT) as c:
        yield c


@pytest.fixture(scope="module")
def spec(client: httpx.Client) -> dict:
    resp = client.get("/openapi.json")
    assert resp.status_code == 200
    return resp.json()


@pytest.fixture(scope="module")
def routes(spec: dict) -> list[Route]:
    found = [Route(method, path, op) for path, ops in sorted(spec["paths"].items())
             for method, op in sorted(ops.items()) if method in ("get", "post", "put", "patch", "delete")]
    assert found
    return found


@pytest.fixture(scope="module")
def http_known(client: httpx.Client) -> list[str]:
    hits = client.get("/api/search", params={"query": "search memory notes input", "limit": 50, "mode": "fts"}).json()["hits"]
    concepts = [c["concept"] for c in client.get("/api/concepts", params={"limit": 20}).json()["concepts"]]
    return known_values(hits, concepts)


def query_text(value: object) -> str | list[str] | None:
    """How a JSON value travels in a query string."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return [json.dumps(v) if isinstance(v, (dict, list)) else str(query_text(v)) for v in value if v is not None]
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


@dataclass(frozen=True)
class HttpCase:
    query: tuple[tuple[str, str], ...]  # pairs, already strings (percent-encoded on sending unless raw)
    path_values: tuple[tuple[str, str], ...]
    body: bytes | None
    content_type: str | None
    mutation: Mutation
    raw_query: str | None = None  # sent byte for byte, for broken percent-encoding


BROKEN_BODIES = [
    (b"", "application/json"), (b"{", "application/json"), (b"[]", "application/json"), (b"null", "application/json"),
    (b'"text"', "application/json"), (b"{}", "application/json"), (b'{"a":NaN}', "application/json"),
    (b'{"a":1e999}', "application/json"), (b"\xff\xfe{}", "application/json"),
    (b"[" * 50_000 + b"]" * 50_000, "application/json"), (b"pattern=x", "application/x-www-form-urlencoded"),
    (b"hello", "text/plain"), (b'{"x": 1}', None), (b'{"a": "\\ud800"}', "application/json"),
]


def query_pairs(args: dict) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for name, value in args.items():
        text = query_text(value)
        out += [(name, t) for t in (text if isinstance(text, list) else [text]) if t is not None]
    return tuple(out)


def json_body(payload: object) -> bytes:
    return json.dumps(payload, ensure_ascii=True).encode()  # lone surrogates travel as \ud800 escapes


def http_cases(route: Route, fuzz: SchemaFuzz, valid: bool) -> st.SearchStrategy[HttpCase]:
    """Requests for one route: valid-shaped, or with one query parameter or the body made wrong."""
    query_params = route.params("query")
    query_schema = {
        "type": "object",
        "properties": {p["name"]: p.get("schema", {}) for p in query_params},
        "required": [p["name"] for p in query_params if p.get("required")],
    }
    body_schema = route.body_schema
    json_fuzz = SchemaFuzz(fuzz.document, fuzz.known, surrogate=True)  # JSON bodies can carry surrogates

    @st.composite
    def build(draw: st.DrawFn) -> HttpCase:
        paths = tuple((p["name"], draw(any_text(200, known=fuzz.known).filter(bool))) for p in route.params("path"))
        args = draw(fuzz.object(query_schema))
        body = json_body(draw(json_fuzz.object(body_schema))) if body_schema is not None else None
        content_type = "application/json" if body_schema is not None else None
        if valid:
            return HttpCase(query_pairs(args), paths, body, content_type, Mutation("valid"))
        places = (["query"] if query_params else []) + (["body", "body"] if body_schema is not None else [])
        if draw(st.sampled_from(places or ["query"])) == "body":
            if draw(st.booleans()):
                payload, mutation = draw(mutated(json_fuzz, body_schema))
                return HttpCase(query_pairs(args), paths, json_body(payload), content_type, mutation)
            body, content_type = draw(st.sampled_from(BROKEN_BODIES))
            return HttpCase(query_pairs(args), paths, body, content_type, Mutation("raw"))
        how = draw(st.sampled_from(["field", "field", "repeated", "raw"]))
        if how == "field":
            args, mutation = draw(mutated(fuzz, query_schema))
            if mutation.kind == "wrong_type":  # a query string carries only text: wrong means unparseable text
                if fuzz.types(query_schema["properties"][mutation.field]) <= {"string", "null"}:
                    args.pop(mutation.field)
                    mutation = Mutation("valid")
                else:
                    args[mutation.field] = draw(st.sampled_from(WRONG_FOR_QUERY) | hostile_text(3))
                    mutation = Mutation("wrong_type", mutation.field)
            return HttpCase(query_pairs(args), paths, body, content_type, mutation)
        query = query_pairs(args)
        if how == "repeated" and query:
            name, value = draw(st.sampled_from(query))
            again = draw(hostile_text(3)) or value
            return HttpCase(query + ((name, again),), paths, body, content_type, Mutation("repeated", name))
        encoded = urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
        garbage = "".join(draw(st.lists(st.sampled_from(RAW_QUERY_GARBAGE + ["a", "b", "1"]), min_size=1, max_size=6)))
        name = draw(st.sampled_from([p["name"] for p in query_params] or ["query"]))
        raw = f"{encoded}&{name}={garbage}" if encoded else f"{name}={garbage}"
        return HttpCase(query, paths, body, content_type, Mutation("raw", name), raw_query=raw)

    return build()


def send(client: httpx.Client, route: Route, case: HttpCase) -> httpx.Response:
    path = route.path
    for name, value in case.path_values:
        path = path.replace("{" + name + "}", urllib.parse.quote(value.encode("utf-8", "surrogatepass"), safe=""))
    headers = {"content-type": case.content_type} if case.content_type else {}
    query = case.raw_query if case.raw_query is not None else urllib.parse.urlencode(case.query, quote_via=urllib.parse.quote)
    request = client.build_request(route.method.upper(), path, content=case.body, headers=headers)
    target = urllib.parse.quote(path, safe="/%") + (f"?{query}" if query else "")
    # httpx refuses a URL component over 64 KiB (as browsers and proxies do): such a request never reaches a server
    assume(len(target) < 65_000)
    request.url = request.url.copy_with(raw_path=target.encode("ascii"))
    return client.send(request)


def response_schema(spec: dict, route: Route, status: int) -> dict | None:
    response = route.operation.get("responses", {}).get(str(status))
    if not response:
        return None
    return response.get("content", {}).get("application/json", {}).get("schema")


def fields_sent(case: HttpCase) -> list[str]:
    names = [name for name, _ in (*case.query, *case.path_values)] + [case.mutation.field or ""]
    if case.raw_query is not None:  # the names as the server decodes them (broken UTF-8 becomes U+FFFD)
        names += [name for name, _ in urllib.parse.parse_qsl(case.raw_query, keep_blank_values=True, errors="replace")]
    if case.body is not None:
        names.append("body")
        try:
            payload = json.loads(case.body)
        except ValueError:
            payload = None
        names += list(payload) if isinstance(payload, dict) else []
    return names


def fields_declared(spec: dict, route: Route) -> list[str]:
    names = [p["name"] for p in route.operation.get("parameters", [])]
    if route.body_schema is not None:
        names += list(SchemaFuzz(spec, [], False).resolve(route.body_schema).get("properties", {}))
    return names


def check_http(http: Http, spec: dict, route: Route, case: HttpCase, resp: httpx.Response) -> None:
    where = f"{route.name} {case!r:.1500}"
    assert resp.status_code < 500, f"{resp.status_code} for {where}\n{resp.text[:500]}\nserver log:\n{http.stderr()[-3000:]}"
    assert resp.headers.get("content-type", "").startswith("application/json"), (resp.status_code, resp.text[:300], where)
    body = resp.json()
    if resp.status_code >= 400:
        assert isinstance(body, dict) and isinstance(body.get("error"), str), (body, where)
        assert_message(body["error"])
        if resp.status_code == 422:
            assert_names_a_field(body["error"], dict.fromkeys(fields_sent(case)), fields_declared(spec, route), case.mutation)
        return
    assert not case.mutation.must_fail, f"{resp.status_code}: accepted {case.mutation} for {where}"
    schema = response_schema(spec, route, resp.status_code)
    if schema is not None:
        jsonschema.validate(body, {**schema, "components": spec.get("components", {})})


def fuzz_routes(http: Http, client: httpx.Client, spec: dict, routes: list[Route], known: list[str],
                valid: bool, examples: int) -> None:
    def fuzzer(route: Route) -> Callable[[], None]:
        fuzz = SchemaFuzz(spec, known, surrogate=False)

        @settings(PROC, max_examples=examples)
        @given(http_cases(route, fuzz, valid))
        def run(case: HttpCase) -> None:
            check_http(http, spec, route, case, send(client, route, case))

        return run

    fuzz_each({route.name: fuzzer(route) for route in routes})


def test_http_routes_valid_shaped_inputs(http: Http, client: httpx.Client, spec: dict, routes: list[Route],
                                         http_known: list[str]) -> None:
    fuzz_routes(http, client, spec, routes, http_known, valid=True, examples=VALID_EXAMPLES)


def test_http_routes_invalid_inputs(http: Http, client: httpx.Client, spec: dict, routes: list[Route],
                                    http_known: list[str]) -> None:
    fuzz_routes(http, client, spec, routes, http_known, valid=False, examples=INVALID_EXAMPLES)


@pytest.mark.parametrize("body", [
    b'{"pattern":"\\ud800 lone surrogate"}', b'{"pattern":"ok","title":"\\udfff"}', b'{"pattern":"a","project":"\\ud83d"}',
    b'{"pattern":"a","source":"\\udc00"}', b'{"\\ud800":1,"pattern":"x"}', b'{"pattern":1e999}', b'{"pattern":NaN}',
    b'{"pattern":"x","concepts":1e999}',
])
def test_learn_body_json_cannot_echo_back_is_a_422(http: Http, client: httpx.Client, body: bytes) -> None:
    """Found by fuzzing: the 422 for these bodies echoed the input, which JSON cannot carry out again (a lone
    surrogate, infinity), so rendering the error raised and the caller got a 500."""
    before = sorted(p.name for p in (http.kb.root / "learnings").iterdir())
    resp = client.post("/api/learn", content=body, headers={"content-type": "application/json"})
    assert resp.status_code == 422, resp.text
    assert resp.json()["error"].startswith("invalid input: ")
    assert sorted(p.name for p in (http.kb.root / "learnings").iterdir()) == before


def test_learn_concepts_with_a_lone_surrogate_are_refused_before_writing(http: Http, client: httpx.Client) -> None:
    """Found by fuzzing: concepts skipped pydantic's string check, so the learning was written to disk and
    then logging it failed (a 500 after the write)."""
    before = sorted(p.name for p in (http.kb.root / "learnings").iterdir())
    resp = client.post("/api/learn", content=b'{"pattern":"ok","concepts":["\\ud800"]}',
                       headers={"content-type": "application/json"})
    assert resp.status_code == 422 and "concepts" in resp.json()["error"], resp.text
    assert sorted(p.name for p in (http.kb.root / "learnings").iterdir()) == before


def test_blank_parameter_name_is_not_blamed_on_another_parameter(client: httpx.Client) -> None:
    """Found by fuzzing: `/api/search?query=x&=1` answered "query: Extra inputs are not permitted"."""
    resp = client.get("/api/search?query=x&=1")
    assert resp.status_code == 422
    assert resp.json()["error"].startswith("invalid input: '' (a parameter with a blank name): unknown argument; accepted: ")


def test_read_without_id_or_file_names_the_parameters(client: httpx.Client) -> None:
    """Found by fuzzing: GET /api/read with neither id nor file answered "query: Value error, give exactly one
    of id ... or file ...", blaming a parameter named query that the route does not have."""
    resp = client.get("/api/read")
    assert resp.status_code == 422
    assert resp.json()["error"].startswith("invalid input: parameters: Value error, give exactly one of id"), resp.text


def test_list_offset_past_sqlite_integers_is_a_422(client: httpx.Client) -> None:
    """Found by fuzzing: GET /api/list?offset=9223372036854775808 was a 500 (OverflowError in SQLite)."""
    resp = client.get("/api/list", params={"offset": "9223372036854775808"})
    assert resp.status_code == 422 and "offset" in resp.json()["error"], resp.text


def test_learn_title_in_four_byte_letters_is_saved(client: httpx.Client) -> None:
    """Found by fuzzing slugify: 60 four-byte letters made a 240-byte slug, and the temporary file name
    (date + slug + pid + thread id) passed the 255-byte limit, so the learning could not be written."""
    resp = client.post("/api/learn", json={"pattern": "Mathematical bold letters in a title.", "title": "𝐇𝐞𝐥𝐥𝐨" * 20})
    assert resp.status_code == 201, resp.text
    assert len(Path(resp.json()["file"]).name.encode()) < 255


MCP_FRAMES = [
    b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"oracle_search","arguments":{"query":"a\\ud800"}}}',
    b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"oracle_search","arguments":{"query":1e999}}}',
    b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"oracle_search","arguments":{"query":"x","limit":NaN}}}',
    b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"oracle_search","arguments":"str"}}',
    b"garbage", b"[]", b"", b"\xff\xfe",
]


def test_http_mcp_endpoint_hostile_frames(http: Http, client: httpx.Client) -> None:
    """Streamable HTTP MCP at /mcp: broken frames are JSON-RPC errors, never a 5xx."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    init = client.post("/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}})
    assert init.status_code == 200, init.text
    session = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    for frame in MCP_FRAMES:
        resp = client.post("/mcp", headers={**headers, **session}, content=frame)
        assert resp.status_code < 500, (frame[:100], resp.status_code, resp.text[:300])
        assert "Traceback" not in resp.text


def test_http_server_still_serves(http: Http, client: httpx.Client, bundled_before: dict) -> None:
    resp = client.get("/api/search", params={"query": CANARY})
    assert resp.status_code == 200
    assert CANARY_FILE in [h["source_file"] for h in resp.json()["hits"]]
    assert http.proc.poll() is None
    log = http.stderr()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]
    assert snapshot(BUNDLED) == bundled_before, "the fuzzing wrote into the bundled knowledge/ folder"


def test_model_level_error_on_query_parameters_is_not_blamed_on_query() -> None:
    """Found by fuzzing: a rule over several query parameters (loc ("query",)) read "query: ...", as if a
    parameter named query were wrong."""
    from oracle_server.http.app import _problem

    err = {"type": "value_error", "loc": ("query",), "msg": "Value error, give exactly one of id or file"}
    assert _problem(err) == "parameters: Value error, give exactly one of id or file"
    assert _problem({"type": "missing", "loc": ("query", "query"), "msg": "Field required"}) == "query: Field required"
    assert _problem({"type": "model_attributes_type", "loc": ("body",), "msg": "Input should be an object"}) == (
        "body: Input should be an object")
