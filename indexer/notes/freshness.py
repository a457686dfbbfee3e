"""Freshness: when a note was last checked, and whether it is past its window (pure functions, no database).

A note says when it was last checked with frontmatter `last_verified: YYYY-MM-DD`, and may name its own
review date with `review_after: YYYY-MM-DD`. A check is good for a window of days, DEFAULT_WINDOW_DAYS (365)
for every type unless `[freshness] days` in oracle.toml says otherwise:

    [freshness]
    days = 90                                    # every type
    days = { learning = 90, principle = 730 }    # or per type (0 = off); a type not named keeps 365

A note is *due* on:
- its `review_after`, unless it was verified on or after that day;
- else its `last_verified` + the window of its type.
It is *stale* once today is past its due day, and stale "since" the due day. Freshness is only claimed from
dates the note states about being checked: a note that never said `last_verified` (nor `review_after`) is
never stale, however old its `date` (issue 40: counting windows from every note's date turned 66 % of a real
folder stale, while a runbook verified in 2023 went unflagged without a [freshness] section).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

FRESHNESS_TYPES = ("principle", "learning", "retro", "note")
# a `last_verified` older than this is stale, with no [freshness] section (docs/configuration.md)
DEFAULT_WINDOW_DAYS = 365
VERIFIED_KEY = "last_verified"
REVIEW_KEY = "review_after"
_ISO_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ].*)?$")
MAX_WINDOW_DAYS = 100_000  # the longest window [freshness] days may give (FreshnessPolicy.parse)
# The last day a window can be counted from: date + the longest window still a date. A later day (`date:
# 9999-12-31`) is treated as absent for freshness, with a warning naming the note (issue 39: OverflowError made
# stats, and every search or consult returning the note, fail).
LAST_COUNTABLE_DAY = dt.date.max - dt.timedelta(days=MAX_WINDOW_DAYS)


def parse_day(value: object) -> dt.date | None:
    """A frontmatter value as a day: a YAML date or datetime, or a "YYYY-MM-DD[...]" string; else None."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str):
        return None
    match = _ISO_DAY.match(value.strip())
    if not match:
        return None
    try:
        return dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None


def countable(day: dt.date | None) -> dt.date | None:
    """`day` if a freshness window can be counted from it, else None (a day too far in the future)."""
    return day if day is not None and day <= LAST_COUNTABLE_DAY else None


def note_freshness_dates(meta: dict) -> tuple[str | None, str | None, list[str]]:
    """(last_verified, review_after) as ISO days from a note's frontmatter, and warnings for values that are
    present but not dates (reported like other frontmatter problems, never silently ignored), and for a
    `last_verified` too far in the future to count a window from (treated as absent for freshness)."""
    out: list[str | None] = []
    warnings: list[str] = []
    for key in (VERIFIED_KEY, REVIEW_KEY):
        value = meta.get(key)
        day = parse_day(value)
        if value not in (None, "") and day is None:
            warnings.append(f"{key}: {value!r} is not a date (YYYY-MM-DD); ignored")
        out.append(day.isoformat() if day else None)
    day = parse_day(meta.get(VERIFIED_KEY))  # (a note's `date` starts no window: nothing to warn about)
    if day is not None and countable(day) is None:
        warnings.append(f"{VERIFIED_KEY}: {day.isoformat()} is too far in the future to count a freshness window"
                        " from; treated as absent for freshness")
    return out[0], out[1], warnings


def _default_days() -> dict[str, int]:
    return dict.fromkeys(FRESHNESS_TYPES, DEFAULT_WINDOW_DAYS)


@dataclass(frozen=True)
class FreshnessPolicy:
    """Days a note of each type stays fresh after it was verified; a type not listed (or 0) has no window. The
    default: DEFAULT_WINDOW_DAYS for every type."""

    days: dict[str, int] = field(default_factory=_default_days)

    def window(self, doc_type: str) -> int | None:
        days = self.days.get(doc_type)
        return days if days else None

    @classmethod
    def parse(cls, value: object, where: str) -> "FreshnessPolicy":
        """From `[freshness]` of oracle.toml: {"days": N} (every type) or {"days": {type: N}} (the types named;
        the others keep the default). ValueError names the problem."""
        if not isinstance(value, dict):
            raise ValueError(f"{where}: `freshness` must be a table ([freshness])")
        unknown = sorted(set(value) - {"days"})
        if unknown:
            raise ValueError(f"{where}: unknown key {unknown[0]!r} in [freshness]; known keys: days")
        days = value.get("days", {})
        if isinstance(days, bool) or not isinstance(days, (int, dict)):
            raise ValueError(f"{where}: [freshness] days must be a number of days or a table of them per type,"
                             " e.g. days = 90 or days = { learning = 90, principle = 365 }")
        per_type = dict.fromkeys(FRESHNESS_TYPES, days) if isinstance(days, int) else {**_default_days(), **days}
        for doc_type, n in per_type.items():
            if doc_type not in FRESHNESS_TYPES:
                raise ValueError(f"{where}: [freshness] days: {doc_type!r} is not a type; use one of "
                                 f"{', '.join(FRESHNESS_TYPES)}")
            if isinstance(n, bool) or not isinstance(n, int) or n < 0 or n > MAX_WINDOW_DAYS:
                raise ValueError(f"{where}: [freshness] days for {doc_type} must be a whole number of days"
                                 " (0 = no window)")
        return cls({k: v for k, v in sorted(per_type.items()) if v})


@dataclass(frozen=True)
class Staleness:
    """Whether a note is past its due day, and the due day ("stale since") when it has one."""

    stale: bool
    due: str | None  # ISO day the note is (or was) due for review; None: it has none
    reason: str | None = None  # "review_after" | "window"


FRESH = Staleness(False, None)


def staleness(doc_type: str, date: str | None, last_verified: str | None, review_after: str | None,
              policy: FreshnessPolicy, today: dt.date) -> Staleness:
    """The rule of the module docstring. All dates are ISO days (or None); `date`, the note's own date, is not
    a claim that anyone checked it and starts no window (kept in the signature: every caller has it)."""
    verified = countable(parse_day(last_verified))  # a day too far ahead to count from is absent here
    review = parse_day(review_after)
    due: dt.date | None = None
    reason = None
    if review is not None and (verified is None or verified < review):
        due, reason = review, "review_after"
    else:
        window = policy.window(doc_type)
        if window and verified is not None:
            due, reason = verified + dt.timedelta(days=window), "window"
    if due is None:
        return FRESH
    return Staleness(today > due, due.isoformat(), reason)


# -- writing last_verified into a note, every other byte kept --------------------------------------------
_KEY_LINE = re.compile(r"^([\"']?)" + VERIFIED_KEY + r"\1[ \t]*:")  # `last_verified:`, quoted or not


class StampRefused(ValueError):
    """The frontmatter cannot be given a new last_verified line safely (the message says why)."""


def stamp_verified(text: str, day: str) -> str:
    """`text` (a note exactly as on disk, decoded as UTF-8: a BOM and CRLF line ends kept) with
    `last_verified: <day>` in its frontmatter: the existing top-level line (and any indented continuation of
    its value) replaced, else a line added before the closing `---`, else a frontmatter block added at the
    top. Every other byte is unchanged."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom):]
    first_end = body.find("\n")
    newline = "\r\n" if first_end > 0 and body[first_end - 1] == "\r" else "\n"
    line = f"{VERIFIED_KEY}: {day}"
    if not body.startswith("---") or body[:first_end if first_end >= 0 else None].rstrip() != "---":
        return f"{bom}---{newline}{line}{newline}---{newline}{body}"
    lines = body.split("\n")  # each keeps its "\r" when the file has CRLF line ends
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if close is None:
        raise StampRefused("the frontmatter opened with --- is never closed")
    found = [i for i in range(1, close) if _KEY_LINE.match(lines[i])]
    if len(found) > 1:
        raise StampRefused(f"the frontmatter sets {VERIFIED_KEY} more than once")
    cr = "\r" if newline == "\r\n" else ""
    if found:
        start = found[0]
        end = start + 1
        while end < close and lines[end][:1] in (" ", "\t"):  # the value continued on indented lines
            end += 1
        lines[start:end] = [line + cr]
    else:
        lines[close:close] = [line + cr]
    return bom + "\n".join(lines)
