"""The ``edit`` tool's text engine: exact and fuzzy replacement (reference 3.3).

``apply_edits`` turns a file's text and the model's edits into the new text,
or raises ``EditError`` with the wording of 3.3 (single-edit and multiple-edit
variants), which the model reads and acts on. It does no I/O: the tool reads
the file, calls it, writes ``EditOutcome.content`` and renders the diffs from
``EditOutcome.before`` / ``after``.

The steps, in order:

1. Strip and remember a UTF-8 BOM (models never include it in ``oldText``).
2. Detect the line ending: CRLF when the first line break is CRLF, else LF.
   Normalize CRLF to LF in the text and in every ``oldText`` / ``newText``.
   A lone CR is not a line break and is left alone, so it survives the round
   trip (Pi also rewrites lone CRs; keeping them means untouched bytes stay).
3. Check every ``oldText`` is non-empty, in edit order.
4. Match every edit against the ORIGINAL text, never incrementally. When each
   ``oldText`` occurs exactly, the exact text is the base. When any does not,
   every edit is matched against a normalized copy of the text (the fuzzy
   base): per line, NFKC, then smart quotes to ASCII, Unicode dashes to ``-``,
   Unicode spaces to a space, then trailing whitespace stripped. Each
   ``oldText`` is looked up as written first, then normalized the same way.
5. Each ``oldText`` must occur once: occurrences are counted at every start
   position (overlapping ones too, so ``"aa"`` in ``"aaa"`` is two: replacing
   either would be a guess).
6. Matches must not overlap (touching is fine); the error names the two edits
   in file order.
7. Replace. On the exact base, the replacements are spliced in. On the fuzzy
   base, each group of lines touched by a replacement is rewritten from the
   normalized text with the replacements applied, and every other line keeps
   its original bytes (trailing spaces, smart quotes and all).
8. Identical result: ``No changes made`` error. Otherwise restore the line
   ending and the BOM.

``repair_edit_arguments`` is the tool's ``prepareArguments`` step: it repairs
the shapes models commonly send before validation (3.3).
"""

from __future__ import annotations

import bisect
import copy
import itertools
import json
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_durable_tui.tools._edit_diff import first_changed_line
from pi_durable_tui.tools._paths import UNICODE_SPACES

BOM = "\ufeff"

_FUZZY_CHARACTERS = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys(UNICODE_SPACES, " "),
    }
)


class EditError(Exception):
    """An edit that cannot be applied; the message is written for the model."""


@dataclass(frozen=True, slots=True)
class EditSpec:
    """One replacement: ``old_text`` (unique in the file) becomes ``new_text``."""

    old_text: str
    new_text: str


@dataclass(frozen=True, slots=True)
class EditOutcome:
    """The result of applying edits to a file's text.

    Attributes:
        content: The new file text to write: original line endings and BOM.
        before: The old text with LF line endings and no BOM (for diffs).
        after: The new text with LF line endings and no BOM (for diffs).
        blocks: How many replacements were made (the number of edits).
        first_changed_line: The 1-based line of ``after`` where the first
            change is shown (see ``first_changed_line``).
        fuzzy: Whether the edits were matched on the normalized text.
    """

    content: str
    before: str
    after: str
    blocks: int
    first_changed_line: int | None
    fuzzy: bool


@dataclass(frozen=True, slots=True)
class _Match:
    edit_index: int
    start: int
    end: int
    new_text: str


def _normalize_line(line: str) -> str:
    return unicodedata.normalize("NFKC", line).translate(_FUZZY_CHARACTERS).rstrip()


def normalize_for_fuzzy_match(text: str) -> str:
    r"""Return the fuzzy-matching form of a text, line by line.

    Each line (split on ``\n``) is put in NFKC form, smart quotes become
    ASCII quotes, Unicode dashes become ``-``, Unicode spaces become a space,
    and trailing whitespace is stripped. The result has exactly as many lines
    as the input, which is what lets untouched lines keep their original bytes.

    Args:
        text: LF-normalized text.

    Returns:
        The normalized text.
    """
    # REMINDER: normalizing per line keeps the line count: NFKC never produces
    # or removes "\n", and it cannot compose across one.
    return "\n".join(_normalize_line(line) for line in text.split("\n"))


def _count_occurrences(base: str, needle: str, first: int) -> int:
    count = 0
    at = first
    while at != -1:
        count += 1
        at = base.find(needle, at + 1)
    return count


@dataclass(frozen=True, slots=True)
class _Wording:
    """The error texts of 3.3, in their single-edit or multiple-edit form."""

    path: str
    total: int

    def _say(self, single: str, multiple: str) -> EditError:
        return EditError(single if self.total == 1 else multiple)

    def empty(self, index: int) -> EditError:
        return self._say(
            f"oldText must not be empty in {self.path}.",
            f"edits[{index}].oldText must not be empty in {self.path}.",
        )

    def not_found(self, index: int) -> EditError:
        return self._say(
            f"Could not find the exact text in {self.path}. The old text must match exactly "
            "including all whitespace and newlines.",
            f"Could not find edits[{index}] in {self.path}. The oldText must match exactly "
            "including all whitespace and newlines.",
        )

    def duplicate(self, index: int, count: int) -> EditError:
        return self._say(
            f"Found {count} occurrences of the text in {self.path}. The text must be unique. "
            "Please provide more context to make it unique.",
            f"Found {count} occurrences of edits[{index}] in {self.path}. Each oldText must be "
            "unique. Please provide more context to make it unique.",
        )

    def overlap(self, first: int, second: int) -> EditError:
        return EditError(
            f"edits[{first}] and edits[{second}] overlap in {self.path}. Merge them into one "
            "edit or target disjoint regions."
        )

    def no_change(self) -> EditError:
        return self._say(
            f"No changes made to {self.path}. The replacement produced identical content. This "
            "might indicate an issue with special characters or the text not existing as "
            "expected.",
            f"No changes made to {self.path}. The replacements produced identical content.",
        )


def _find(base: str, old_text: str, fuzzy: bool) -> tuple[str, int]:
    """Locate ``old_text`` in ``base``: as written, then (fuzzy) normalized."""
    at = base.find(old_text)
    if at != -1 or not fuzzy:
        return old_text, at
    needle = normalize_for_fuzzy_match(old_text)
    return needle, base.find(needle) if needle else -1


def _splice(text: str, matches: Sequence[_Match], offset: int = 0) -> str:
    parts: list[str] = []
    at = offset
    for match in matches:
        parts += [text[at - offset : match.start - offset], match.new_text]
        at = match.end
    parts.append(text[at - offset :])
    return "".join(parts)


def _lines_with_breaks(text: str) -> list[str]:
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + [lines[-1]]


def _overlay_touched_lines(original: str, base: str, matches: Sequence[_Match]) -> str:
    """Apply ``matches`` (offsets in ``base``) rewriting only the lines they touch."""
    original_lines = _lines_with_breaks(original)
    base_lines = _lines_with_breaks(base)
    starts = [0]
    for line in base_lines[:-1]:
        starts.append(starts[-1] + len(line))
    # Group matches whose line ranges share a line; a range is [first, last].
    groups: list[tuple[int, int, list[_Match]]] = []
    for match in matches:
        first = bisect.bisect_right(starts, match.start) - 1
        # The line holding the match's last character (a final "\n" included).
        last = bisect.bisect_right(starts, match.end - 1) - 1
        if groups and first <= groups[-1][1]:
            group_first, group_last, members = groups[-1]
            groups[-1] = (group_first, max(group_last, last), [*members, match])
        else:
            groups.append((first, last, [match]))
    out: list[str] = []
    line_at = 0
    for first, last, members in groups:
        out += original_lines[line_at:first]
        out.append(_splice("".join(base_lines[first : last + 1]), members, starts[first]))
        line_at = last + 1
    out += original_lines[line_at:]
    return "".join(out)


def apply_edits(path: str, content: str, edits: Sequence[EditSpec]) -> EditOutcome:
    """Apply all edits to a file's text, each matched against the original.

    Args:
        path: The path as the model gave it, used only in error messages.
        content: The file's text, decoded (may hold a BOM and CRLF endings).
        edits: The replacements, in the order the model gave them.

    Returns:
        The new text, the LF forms for diffs, and what changed.

    Raises:
        EditError: When ``edits`` is empty, an ``oldText`` is empty, missing
            or not unique, two edits overlap, or nothing would change; the
            message is the one of reference 3.3.
    """
    if not edits:
        raise EditError("Edit tool input is invalid. edits must contain at least one replacement.")
    bom = BOM if content.startswith(BOM) else ""
    text = content[len(bom) :]
    first_break = text.find("\n")
    crlf = first_break > 0 and text[first_break - 1] == "\r"
    before = text.replace("\r\n", "\n")
    wording = _Wording(path, len(edits))
    olds = [edit.old_text.replace("\r\n", "\n") for edit in edits]
    for index, old_text in enumerate(olds):
        if not old_text:
            raise wording.empty(index)

    fuzzy = any(old_text not in before for old_text in olds)
    base = normalize_for_fuzzy_match(before) if fuzzy else before
    matches: list[_Match] = []
    for index, (old_text, edit) in enumerate(zip(olds, edits, strict=True)):
        needle, at = _find(base, old_text, fuzzy)
        if at == -1:
            raise wording.not_found(index)
        count = _count_occurrences(base, needle, at)
        if count > 1:
            raise wording.duplicate(index, count)
        matches.append(_Match(index, at, at + len(needle), edit.new_text.replace("\r\n", "\n")))

    matches.sort(key=lambda match: match.start)
    for previous, current in itertools.pairwise(matches):
        if previous.end > current.start:
            raise wording.overlap(previous.edit_index, current.edit_index)

    after = _overlay_touched_lines(before, base, matches) if fuzzy else _splice(base, matches)
    if after == before:
        raise wording.no_change()
    restored = after.replace("\n", "\r\n") if crlf else after
    return EditOutcome(
        content=bom + restored,
        before=before,
        after=after,
        blocks=len(edits),
        first_changed_line=first_changed_line(before, after),
        fuzzy=fuzzy,
    )


def _parsed_edits(value: str) -> Any:
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    return parsed if isinstance(parsed, (list, dict)) else value


def repair_edit_arguments(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Repair the argument shapes models commonly send to ``edit`` (3.3).

    On a copy (the input is never mutated): ``edits`` given as a JSON string
    holding an array or a single object is parsed; a single edit object is
    wrapped in a list; top-level ``oldText`` / ``newText`` (both strings) are
    moved into ``edits``, appended after any edits already there (an ``edits``
    value that is not a list is then replaced). Anything else is left for
    validation to report. Repairing a repaired value changes nothing.

    Args:
        raw: The arguments as the model sent them.

    Returns:
        The repaired arguments.
    """
    args = copy.deepcopy(dict(raw))
    edits = args.get("edits")
    if isinstance(edits, str):
        edits = args["edits"] = _parsed_edits(edits)
    if isinstance(edits, dict):
        edits = args["edits"] = [edits]
    old_text, new_text = args.get("oldText"), args.get("newText")
    if isinstance(old_text, str) and isinstance(new_text, str):
        del args["oldText"], args["newText"]
        kept = edits if isinstance(edits, list) else []
        args["edits"] = [*kept, {"oldText": old_text, "newText": new_text}]
    return args
