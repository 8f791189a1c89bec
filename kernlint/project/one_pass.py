"""One-pass readings of text shapes the project scan used regexes or walks for that are quadratic on long
input (issue 30): a parameter's name, a class template member's class, the `>` closing each `<`.

Each gives what the regex or walk it replaces gives (tests/test_index_scaling.py compares them on random
text), in time linear in the text.
"""
from __future__ import annotations

import re

_WORD_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"  # `\w` of `re` on str


def word_name(text: str, end: int) -> str:
    """The identifier ending at `end` (exclusive) that `[A-Za-z_]\\w*` matches leftmost: the run of word
    characters before `end` from its first ASCII letter or `_` ("" when the run holds none)."""
    start = end
    while start > 0 and is_word_char(text[start - 1]):
        start -= 1
    for k in range(start, end):
        if text[k] in _WORD_START:
            return text[k:end]
    return ""


def parameter_name(param: str) -> str:
    """The name a parameter declaration `TYPE name [= default]` declares: what the first match of
    `([A-Za-z_]\\w*)\\s*(?:=[^,]*)?$` finds ("" for none), in one pass instead of that regex's
    retry at every character of a long identifier (quadratic: issue 30). The regex's leftmost match is
    the first word run that is followed by spaces and then either `=` with no comma after it or the
    end of the text (within a run, every start reaches the same end, so the leftmost wins)."""
    last_comma = param.rfind(",")
    eq = param.find("=", last_comma + 1)
    while eq >= 0:
        j = eq
        while j > 0 and param[j - 1].isspace():
            j -= 1
        if j > 0 and is_word_char(param[j - 1]):
            name = word_name(param, j)
            if name:
                return name
        eq = param.find("=", eq + 1)
    j = len(param)
    while j > 0 and param[j - 1].isspace():
        j -= 1
    return word_name(param, j) if j > 0 and is_word_char(param[j - 1]) else ""


def class_member(pre: str) -> str | None:
    """The class name of `R Engine<Real>::run` at the end of `pre`, None for none: group 1 of the first
    match of `([A-Za-z_]\\w*)\\s*<[^<>]*(?:<[^<>]*>[^<>]*)*>\\s*::\\s*~?[A-Za-z_]\\w*\\s*$` in `pre`, read
    backwards from the end in one pass (that regex retried at every character of a long identifier:
    quadratic). The shape is forced: a member name after `::` (and `~`), a `>` closing a template
    argument list nested at most two deep, the class name before it."""
    j = len(pre)
    while j > 0 and pre[j - 1].isspace():
        j -= 1
    k = j
    while k > 0 and is_word_char(pre[k - 1]):
        k -= 1
    if k == j or pre[k] not in _WORD_START:
        return None  # the member name starts right after `::` / `~`: its whole run must be an identifier
    if k > 0 and pre[k - 1] == "~":
        k -= 1
    while k > 0 and pre[k - 1].isspace():
        k -= 1
    if pre[max(0, k - 2):k] != "::":
        return None
    k -= 2
    while k > 0 and pre[k - 1].isspace():
        k -= 1
    if k == 0 or pre[k - 1] != ">":
        return None
    depth = 0
    i = k - 1
    while i >= 0:
        ch = pre[i]
        if ch == ">":
            depth += 1
            if depth > 2:
                return None
        elif ch == "<":
            depth -= 1
            if depth == 0:
                break
        i -= 1
    if i < 0:
        return None
    while i > 0 and pre[i - 1].isspace():
        i -= 1
    return (word_name(pre, i) or None) if i > 0 and is_word_char(pre[i - 1]) else None


_ANGLE_MARKS = re.compile(r"[()<>;{}]")


def angle_closes(text: str) -> dict[int, int]:
    """`scan._angle_forward(text, p)` for every `<` at p that it answers with a `>` (the others: -1), in one
    pass instead of one walk of up to 4,000 characters per `<` (issue 30). Brackets are matched as the
    walk does: per parenthesis level (a `<` opened inside parentheses is closed there, a `)` of the level
    it was opened at ends it unanswered), `;`, `{` and `}` end every open `<`, a `<<<` those of its level;
    an answer further than the walk's window is none."""
    out: dict[int, int] = {}
    frames: list[list[int]] = [[]]  # per open parenthesis, the `<` opened at its level and not closed
    for m in _ANGLE_MARKS.finditer(text):
        i = m.start()
        ch = m.group()
        if ch == "<":
            if text.startswith("<<<", i):
                frames[-1].clear()
            else:
                frames[-1].append(i)
        elif ch == ">":
            if frames[-1]:
                lt = frames[-1].pop()
                if i - lt < 4000:
                    out[lt] = i
        elif ch == "(":
            frames.append([])
        elif ch == ")":
            if len(frames) > 1:
                frames.pop()
            else:
                frames[-1].clear()
        else:
            frames = [[]]
    return out
