"""What kind of notes a folder holds, from its name and what its files look like (pure: no disk, no database).

`oracle init` types a user's folders with this rule instead of leaving the ones it does not know out (issue
40: a folder with `learnings/` beside `decisions/`, `handbook/` and `runbooks/` indexed only the learnings).
Each folder gets one of the index's types and a reason a person can check:

- decisions (Architecture Decision Records) -> `principle`: named like `decisions/`, `adr/`, or most files look like
  ADRs (a Decision heading or field with a Status / Context / Consequences one; or `0001-use-postgres.md` with
  two). They say how we work and why, which is what principles are consulted for.
- runbooks -> `learning`: named like `runbooks/`, `playbooks/`, or most files have procedure headings (Steps,
  Rollback, Symptoms, Verification...): what was found to work, kept to be done again.
- retrospectives -> `retro`: named like `retros/`, `postmortems/`, `journal/`, or most files are named by date
  (checked before the ADR shape: ADRs are numbered, a journal is dated).
- principles, learnings by other names (`guidelines/`, `lessons/`...) -> `principle`, `learning`.
- anything else -> `note`: searched like every other note, without a claim about what it is.

Names are compared case-insensitively with `-`, `_` and spaces ignored, so `Decision Records` and
`decision_records` are the same name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_DATED = re.compile(r"^\d{4}-\d{2}-\d{2}")
_NUMBERED = re.compile(r"^(?:adr[-_ ]?)?\d{3,5}[-_ ]", re.IGNORECASE)  # 0001-use-postgres.md, ADR-012-x.md
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FIELD_LINE = re.compile(r"^\s*(?:[-*]\s+)?(?:\*\*)?([A-Za-z][A-Za-z ]{1,30}?)(?:\*\*)?\s*:(?:\*\*)?", re.MULTILINE)

ADR_MARKS = frozenset({"status", "context", "decision", "consequences", "decision outcome", "considered options",
                       "decision drivers", "context and problem statement", "alternatives", "options considered"})
_DECIDED = frozenset({"decision", "decision outcome", "decisions"})
RUNBOOK_MARKS = frozenset({"steps", "procedure", "rollback", "symptoms", "diagnosis", "mitigation", "verification",
                           "verify", "prerequisites", "escalation", "recovery", "when to use", "how to"})

_NAMES: dict[str, tuple[str, str]] = {}  # normalised folder name -> (kind, type)
for _kind, _type, _names in (
    ("decisions (ADRs)", "principle", "decisions decision adr adrs decisionrecords architecturedecisions "
                                      "architecturedecisionrecords decisionlog"),
    ("runbooks", "learning", "runbooks runbook playbooks playbook procedures sops howto howtos"),
    ("retrospectives", "retro", "retros retro retrospectives postmortems postmortem incidents journal journals "
                                "daily dailynotes sessions"),
    ("principles", "principle", "principles guidelines standards conventions values"),
    ("learnings", "learning", "learnings lessons lessonslearned til patterns insights"),
):
    for _name in _names.split():
        _NAMES[_name] = (_kind, _type)


@dataclass(frozen=True)
class FolderKind:
    """One folder's type for the index, what kind of notes that is, and why (said by `oracle init`)."""

    type: str  # principle | learning | retro | note
    kind: str  # "decisions (ADRs)", "runbooks", "retrospectives", "principles", "learnings", "notes"
    reason: str

    @property
    def specific(self) -> bool:
        """Was anything recognised (else: generic notes)?"""
        return self.type != "note"


NOTES = FolderKind("note", "notes", "no name or shape recognised: searched as generic notes")


def normal_name(name: str) -> str:
    return re.sub(r"[-_\s]+", "", name).lower()


def marks(text: str) -> set[str]:
    """The structural words a note uses: its headings and its `Field:` lines (ADRs written as `Status: Accepted`),
    lower-cased, a trailing colon or leading numbering (`1. Context`) dropped."""
    found = set()
    for raw in [*_HEADING.findall(text), *_FIELD_LINE.findall(text)]:
        words = re.sub(r"^[\d.)\s]+", "", raw).strip().rstrip(":").strip("*_ ").lower()
        if words:
            found.add(words)
    return found


def looks_like_adr(file_name: str, text: str) -> bool:
    """A Decision heading or field (`Decision`, `Decision Outcome`) with another ADR mark (Status, Context,
    Consequences...), or a numbered name (`0001-x.md`) with two marks. Session notes and handoffs also have
    Status and Context (nat-brain's archive/): without the decision itself they are not ADRs."""
    found = marks(text)
    hits = len(found & ADR_MARKS)
    decided = bool(found & _DECIDED)
    return (decided and hits >= 2) or (hits >= 2 and _NUMBERED.match(file_name) is not None)


def looks_like_runbook(text: str) -> bool:
    return len(marks(text) & RUNBOOK_MARKS) >= 2


def classify(folder: str, files: Sequence[tuple[str, str]]) -> FolderKind:
    """The kind of the folder `folder` (a root-relative path; its last name is what counts) holding `files`
    ((file name, text) of the markdown in it, at any depth below). By name first, then by the shape most of
    its files share; a folder with no markdown is generic."""
    name = folder.rstrip("/").rsplit("/", 1)[-1]
    named = _NAMES.get(normal_name(name))
    n = len(files)
    adrs = sum(1 for file_name, text in files if looks_like_adr(file_name, text))
    if named:
        kind, doc_type = named
        shaped = f"; {adrs} of {n} files look like ADRs" if doc_type == "principle" and adrs else ""
        return FolderKind(doc_type, kind, f"named {name}/{shaped}")
    if not n:
        return NOTES
    dated = sum(1 for file_name, _ in files if _DATED.match(file_name))
    if dated * 2 > n:  # ADRs are numbered, not dated: a folder of dated notes is a journal of what happened
        return FolderKind("retro", "retrospectives", f"{dated} of {n} files named by date")
    if adrs * 2 > n:
        return FolderKind("principle", "decisions (ADRs)",
                          f"{adrs} of {n} files look like ADRs (Status/Context/Decision headings)")
    runbooks = sum(1 for _, text in files if looks_like_runbook(text))
    if runbooks * 2 > n:
        return FolderKind("learning", "runbooks",
                          f"{runbooks} of {n} files have procedure headings (Steps, Rollback...)")
    return NOTES
