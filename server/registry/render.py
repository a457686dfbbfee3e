"""Human-readable CLI output, rendered from the JSON shape of each result (a model's `model_dump()`).

The CLI answers either in-process or through a running `oracle serve --http` (server/cli/remote.py); both give
the same JSON, and these functions turn JSON into text, so the two paths print the same thing. Plain dicts,
not models: the remote path must not pay for importing pydantic and the service layer. No Python reprs
reach a person: `None` is "n/a" or "never", booleans are words.
"""

from __future__ import annotations

import re

CONFIG_NAME = "oracle.toml"

# What a terminal acts on rather than shows: C0 controls (ESC starts the sequences that retitle a window or clear the
# screen), DEL, C1 controls (U+009B is a CSI), line and paragraph separators, bidi overrides and isolates; and lone
# surrogates (a file name's bytes that are not UTF-8), which no terminal encoding can print.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_LINES_KEPT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte the file system holds
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, lines: bool = False) -> str:
    """Text as a terminal may print it, every character it would act on shown as an escape (`\\n`, `\\x1b`,
    `\\u202e`). For a name (a file, an author, a folder) the default: one line whatever the name holds, so that a
    file named "x.md\\nsaved: ..." cannot forge a line of the answer (issue 45). `lines=True` keeps newlines and
    tabs, for text that has lines of its own (a note's body, a whole answer)."""
    return (_LINES_KEPT if lines else _UNPRINTABLE).sub(_escape, str(text))


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def summary_lines(unmapped: dict[str, int], aliases: dict[str, str], excluded: dict[str, int],
                  skipped: dict[str, str], top: int = 6) -> list[str]:
    """The short "what was left out" report shared by init, `oracle index` and `oracle stats`: at most
    a handful of lines however many folders there are."""
    lines: list[str] = []
    if unmapped:
        ranked = sorted(unmapped.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = ", ".join(f"{'(root)' if k == '.' else printable(k) + '/'} {v}" for k, v in ranked[:top])
        more = f", and {sum(v for _, v in ranked[top:])} in {len(ranked) - top} more" if len(ranked) > top else ""
        lines.append(f"not indexed (no type): {_files(sum(unmapped.values()))}: {shown}{more}")
        lines.append(f"  to index them: set default_type or map their folders in {CONFIG_NAME}"
                     " (`oracle init` writes one)")
    if aliases:
        link, target = next(iter(aliases.items()))
        lines.append(f"symlinks to notes indexed under their real name: {len(aliases)} (e.g. {printable(link)} ->"
                     f" {printable(target)})")
    if excluded:
        lines.append(f"left out by rules: {_files(sum(excluded.values()))} ("
                     + ", ".join(f"{printable(k)} {v}" for k, v in sorted(excluded.items())) + ")")
    if skipped:
        lines.append(f"skipped (unreadable or unsafe): {_files(len(skipped))}; `oracle stats --json` lists them")
    return lines


def warning_lines(warnings: list[str]) -> list[str]:
    """`warning: ...` lines; a warning naming a file names it as `printable` shows it (one line each)."""
    return [f"warning: {printable(w)}" for w in warnings]


def _ms(value: object) -> str:
    return "n/a" if value is None else f"{value} ms"


def _names(items: list[str], count: int, limit: int = 3) -> str:
    shown = ", ".join(printable(i) for i in items[:limit])
    return shown + (f", ... ({count - limit} more)" if count > limit else "")


def result_count(total: int, unit: str, mode: str, took_ms: float, reranked_by: str | None = None) -> str:
    """The first line of a search answer, for the CLI and the MCP tool's text alike: "3 notes (hybrid, 9 ms)",
    "3 notes (hybrid, reranked by ce-1a2b, 9 ms)" when a cross-encoder reordered them."""
    noun = "note" if unit == "note" else "section"
    how = f"{mode}, reranked by {reranked_by}" if reranked_by else mode
    return f"{total} {noun}{'' if total == 1 else 's'} ({how}, {took_ms} ms)"


def phrasings_text(phrasings: list[int] | None) -> str:
    """Whose words a hit of a search with variants holds: `words of query+v2` (empty without variants, or when
    only the meaning of the phrasings together found it)."""
    if not phrasings:
        return ""
    return ", words of " + "+".join("query" if p == 0 else f"v{p}" for p in phrasings)


def search(data: dict) -> tuple[list[str], list[str]]:
    """(stdout lines, stderr lines) for a SearchResult's JSON: the one rendering of a full page, for the CLI and for
    the MCP tool's text with `detail=full` (server/registry/text.py), so neither can hide what the other shows."""
    meta = data["meta"]
    out = [result_count(data["total"], meta.get("unit", "note"), meta["mode"], meta["took_ms"],
                        meta.get("reranked_by"))]
    for n, hit in enumerate(data["hits"], start=data["offset"] + 1):
        where = f"{printable(hit['source_file'])}:{hit['line_start']}-{hit['line_end']}"
        heading = f" › {printable(hit['heading'])}" if hit["heading"] else ""
        weak = ", weak match" if hit.get("weak") else ""
        found_by = f", {'+'.join(hit['found_by'])}" if hit.get("found_by") else ""  # not in a brief hit
        out.append(f"\n{n}. [{hit['type']}] {printable(hit['title'])}{heading}  ({hit['score']:.4f}"
                   f"{found_by}{phrasings_text(hit.get('phrasings'))}{weak})")
        out.append(f"   {where}  id={hit['id']}")
        out.append(f"   {hit['snippet']}")
        for section in hit.get("sections", [])[:5]:
            out.append(f"   also: {printable(section['heading'] or '(intro)')}"
                       f"  :{section['line_start']}-{section['line_end']}  id={section['id']}")
        for duplicate in hit.get("duplicates", []):
            out.append(f"   same content: {printable(duplicate['source_file'])}")
        newer = hit.get("superseded_by")
        if newer:
            out.append(f"   SUPERSEDED by {printable(newer['source_file'])} (id {newer.get('id') or 'not indexed'})")
        if hit.get("stale"):
            out.append(f"   STALE since {hit['stale_since']} (last verified {hit.get('last_verified') or 'never'})")
        out += [f"   relation: {printable(t['subject'])} — {printable(t['predicate'])} — {printable(t['object'])}"
                for t in hit.get("relations", [])]
    if data.get("try"):
        out.append("\n" + try_line(data["try"]))
    return out, warning_lines(meta.get("warnings", []))


def try_line(words: list[str]) -> str:
    """A weak or empty page's words to ask with next (SearchResult.try_), for the CLI and the MCP tool's text."""
    return "try the notes' own words: " + "; ".join(words)


def budget_line(budget_tokens: int, budget_from: str, mode: str) -> str:
    """Which budget and mode a consultation used, when the caller's context window decided them (else "": a
    consultation without one reads as before). Shared by the MCP text and the CLI."""
    if budget_from != "context_window" and mode == "full":
        return ""
    source = {"context_window": "15% of the context window",
              "budget_tokens": "as given"}.get(budget_from, "the default")
    shown = "core (principles only: the context window is under 30,000 tokens)" if mode == "core" else "full"
    return f"budget: {budget_tokens} tokens ({source}); mode: {shown}"


def consult(data: dict) -> tuple[list[str], list[str]]:
    budget = budget_line(data["budget_tokens"], data.get("budget_from", "default"), data.get("mode", "full"))
    out = ([data["guidance"]] + ([budget] if budget else [])
           + ([f"working_set_id={data['working_set_id']}"] if data.get("working_set_id") else []))
    return out, warning_lines(data.get("warnings", []))


def learn(data: dict) -> tuple[list[str], list[str]]:
    embedded = "embedded" if data["embedded"] else "keyword index only, embedding pending"
    out = [f"saved {printable(data['file'])} (id {data['id']}, {embedded})"]
    for dup in data.get("near_duplicates", []):
        out.append(f"similar: {printable(dup['title'])} ({printable(dup['source_file'])},"
                   f" similarity {dup['similarity']:.2f})")
    return out, warning_lines(data.get("warnings", []))


def index(data: dict) -> tuple[list[str], list[str]]:
    """A SyncReport's `as_dict()`: the summary and a short account of what was left out."""
    out = [
        f"notes: {data['added']} added, {data['changed']} changed, {data['removed']} removed,"
        f" {data['unchanged']} unchanged; {len(data['skipped'])} skipped; sections written: {data['chunks_written']};"
        f" embeddings: {data['embedded']} computed, {data['embeddings_cached']} cached;"
        f" {data['seconds']:.2f}s (keyword {data['keyword_seconds']:.2f}s, vector {data['vector_seconds']:.2f}s)"
    ]
    if data.get("pulled") or data.get("pushed") or data.get("deleted_here") or data.get("tombstoned") \
            or data.get("conflicts"):
        out.append(f"working copy: {data['pulled']} pulled, {data['pushed']} pushed, {data['deleted_here']} deleted"
                   f" here (deleted elsewhere), {data['tombstoned']} deletions sent,"
                   f" {len(data['conflicts'])} conflicts")
        out += [f"conflict: {printable(c)} (both kept, both searchable)" for c in data["conflicts"]]
    skipped = data["skipped"]
    if len(skipped) <= 5:
        out += [f"skipped {printable(rel)}: {printable(reason)}" for rel, reason in skipped.items()]
        skipped = {}
    out += summary_lines(data["unmapped"], data.get("aliases", {}), data.get("excluded", {}), skipped)
    return out, warning_lines(data["warnings"])


def serving_text(serving: dict) -> str:
    """`engine pid 123, 4 sessions`, `fallback pid 456 (the engine died: ...)`."""
    text = f"{serving['mode']} pid {serving['pid']}"
    if serving.get("sessions") is not None:
        text += f", {serving['sessions']} session{'s' if serving['sessions'] != 1 else ''}"
    if serving["mode"] == "fallback" and serving.get("detail"):
        text += f" ({serving['detail']})"
    return text


def stats(data: dict) -> tuple[list[str], list[str]]:
    """Everything `oracle stats --json` holds that a person acts on, in words."""
    docs, files, emb, drift, usage = data["documents"], data["files"], data["embeddings"], data["drift"], data["usage"]
    vector = data["vector_store"]
    out = [
        f"oracle {data['version']}",
        f"root: {printable(data['root'])}",
        f"index: {printable(data['data_dir'] if data.get('store', 'sqlite') == 'sqlite' else data['store'])}",
        f"notes: {files['total']}  " + "  ".join(f"{k}: {v}" for k, v in files["by_type"].items()),
        f"sections: {docs['total']}  " + "  ".join(f"{k}: {v}" for k, v in docs["by_type"].items()),
        f"concepts: {data['concepts']}  last indexed: {data['last_indexed'] or 'never'}",
        f"embeddings: {emb['embedded_chunks']}/{docs['total']} ({emb['coverage']:.1%}), {emb['cached']} cached;"
        f" vector store: {'ok' if vector['ok'] else 'DOWN'} ({vector['detail']})",
    ]
    if drift["in_sync"]:
        out.append("drift: none")
    else:
        out.append(f"drift: {drift['not_indexed_count']} not indexed, {drift['changed_since_index_count']} changed,"
                   f" {drift['vanished_count']} vanished (run `oracle index`)")
        for key, label in (("not_indexed", "not indexed"), ("changed_since_index", "changed"),
                           ("vanished", "vanished")):
            if drift[key]:
                out.append(f"  {label}: {_names(drift[key], drift[key + '_count'])}")
    skipped = files["skipped"]
    out += summary_lines(drift["unmapped_folders"], {}, drift.get("excluded", {}), {})
    if drift.get("symlink_aliases"):
        out.append(f"symlinks to notes indexed under their real name: {drift['symlink_aliases']}")
    fresh = data.get("freshness")
    if fresh:
        windows = ", ".join(f"{k} {v} d" for k, v in fresh["window_days"].items()) or "none ([freshness] days)"
        out.append(f"stale notes: {fresh['stale']}  "
                   + "  ".join(f"{k}: {v}" for k, v in fresh["stale_by_type"].items())
                   + f"  (windows: {windows})")
    out.append(f"notes with warnings: {files['with_warnings']}"
               + (" (see `oracle index` output)" if files["with_warnings"] else ""))
    if skipped:
        out.append(f"skipped: {len(skipped)} files: "
                   + _names([f"{k} ({v})" for k, v in skipped.items()], len(skipped)))
    by = usage.get("search_latency_by_process") or {}
    latency = "; ".join(f"{proc} p50 {_ms(v['p50_ms'])}, p95 {_ms(v['p95_ms'])} over {int(v['samples'] or 0)}"
                        for proc, v in by.items()) or (f"p50 {_ms(usage['search_p50_ms'])},"
                                                       f" p95 {_ms(usage['search_p95_ms'])}")
    cold = usage.get("search_cold_starts") or 0
    cold_text = f"; {cold} cold starts, p50 {_ms(usage.get('search_cold_p50_ms'))}" if cold else ""
    out.append(f"usage: {usage['searches']} searches ({latency}{cold_text}), {usage['consultations']} consultations,"
               f" {usage['learnings']} learnings")
    if data.get("serving"):
        out.append(f"served by: {serving_text(data['serving'])}")
    copy = data.get("working_copy")
    if copy:
        out.append(f"team store: {copy['notes']} notes, {copy['tombstones']} deleted, {copy['revisions']} revisions,"
                   f" {copy['conflicts']} conflict copies; this copy writes as {printable(copy['author'])}")
        out += [f"  conflict: {printable(c['path'])} -> {printable(c['copy'])} ({printable(c['author'])})"
                for c in copy["recent_conflicts"][:5]]
    return out, warning_lines(drift.get("config_warnings", []))
