"""What the launches of one host function read of its text before them, read once per function (issue 30).

The project scan (kernlint/project/scan.py) reads, for each launch, the host function's simple locals,
the declared types of its arguments, the assignments behind pointer offsets and plain dim3s, all from
the text before the launch. Read again for each launch, that is quadratic in the launches of one
function (4,000 launches took 35 s); `HostBody` finds each kind of match once in the whole function and
gives a launch those that end before its `<<<`, which are those a search of the text before it finds.
"""
from __future__ import annotations

import bisect
import re

from kernlint.frontend.pointer_offsets import offset_candidate
from kernlint.project.host_text import (
    _BRACES,
    _DECL_KEYWORDS,
    _IDENTIFIER,
    _LOCAL,
    _PLAIN_DIM3,
    _STRIPPED_TYPES,
    _Block,
    _declarations,
    _declarations_in,
    _declared_types,
    _match_forward,
    _maybe_reassigned,
    _named_pattern,
    _normal_type,
    _strip_decls,
)

_ASSIGNMENT_HEAD = re.compile(r"(?<![\w.>])\b([A-Za-z_]\w*)\s*=(?!=)\s*")  # `_assignments_of(name)` up to its value
_STOPS = re.compile(r"[;{}]")


class HostBody:
    """What the launches of one host function read of its text before them: its simple locals, declared
    types, assignments of pointer offsets and plain dim3s. Each is found once in the whole function
    (matches are read in the order a search of the text before a launch finds them, and a launch takes
    those ending before its `<<<`), not once per launch in the text before it (quadratic in the launches:
    issue 30). The patterns' matches end at the first `;` (or name) after their start, so the matches
    ending before a launch are those a search of the text before it finds."""

    def __init__(self, code: str, fn: _Block) -> None:
        self._bisect = bisect.bisect_right
        self.fn = fn
        self.start = fn.start
        close = -1
        depth = 0
        for m in _BRACES.finditer(code, fn.start):  # the whole function, however long (else the file's end)
            depth += 1 if m.group() == "{" else -1
            if depth == 0:
                close = m.start()
                break
        self.text = code[fn.start:close if close >= 0 else len(code)]
        self.code = code
        # _LOCAL's matches, read incrementally by the launches in order
        self._locals = list(_LOCAL.finditer(self.text))
        self._local_next = 0
        self._found: dict[str, str] = {}
        self._declared_twice: set[str] = set()
        self._assigns: dict[str, list[tuple[int, str]]] | None = None
        self._decls: dict[str, list[tuple[int, str]]] | None = None
        self._param_decls: dict[str, list[tuple[int, str, str]]] | None = None
        self._reassigned: dict[str, int] = {}  # name -> end of its first assignment (-1: none)
        self._plain_dim3: list[tuple[int, str]] | None = None
        self._dim3_memo: dict[str, tuple[str | None, int]] = {}
        self._whole: str | None = None
        self._host_types: tuple[str, ...] | None = None
        self._dim3_at = self.text.find("dim3")

    def _rel(self, pos: int) -> int:
        return pos - self.start

    # --- pointer offsets (pointer_offsets.offset_of's `values`)
    def values(self, name: str, pos: int) -> list[str]:
        """The values assigned to `name` before `pos`, as `_assignments_of(name).finditer` of the text
        before it gives them."""
        if self._assigns is None:
            self._assigns = {}
            stops = [m.start() for m in _STOPS.finditer(self.text)]
            last_end: dict[str, int] = {}
            for m in _ASSIGNMENT_HEAD.finditer(self.text):
                name_ = m.group(1)
                if m.start() < last_end.get(name_, -1):
                    continue  # inside the previous match of that name: its own search skips it
                k = self._bisect(stops, m.end() - 1)
                stop = stops[k] if k < len(stops) else -1
                if stop < 0 or self.text[stop] != ";":
                    continue
                value_start = m.end()
                if stop == value_start:  # `name = ;`: the regex gives a space back to `[^;{}]+`, if any
                    if not self.text[m.end() - 1].isspace():
                        continue
                    value_start -= 1
                last_end[name_] = stop + 1
                value = self.text[value_start:stop]
                if offset_candidate(value):  # (offset_of finds nothing in the others, wherever they are)
                    self._assigns.setdefault(name_, []).append((stop + 1, value))
            self._assign_ends = {k: [end for end, _v in v] for k, v in self._assigns.items()}
        found = self._assigns.get(name)
        if not found:
            return []
        return [v for _end, v in found[:self._bisect(self._assign_ends[name], self._rel(pos))]]

    # --- declared types (_declared_types)
    def declared_types(self, args: tuple[str, ...], pos: int) -> tuple[str, ...]:
        if self._decls is None:
            self._param_decls = _declarations(self.fn.params_text, "")
            self._decls = {}
            for m in _declarations_in(self.text):  # as `_declarations` reads a body, keeping each one's end
                t = " ".join(m.group(1).split())
                if t.split(" ")[0] in _DECL_KEYWORDS or t.split("<")[0].split(" ")[-1] in _DECL_KEYWORDS:
                    continue
                self._decls.setdefault(m.group(2), []).append((m.end(), t))
            self._decl_ends = {name_: [end for end, _t in v] for name_, v in self._decls.items()}
        rel = self._rel(pos)
        out = []
        for a in args:
            a = a.strip()
            t = ""
            if _IDENTIFIER.fullmatch(a):
                body = self._decls.get(a, [])
                k = self._bisect(self._decl_ends.get(a, []), rel)
                if k:
                    t = body[k - 1][1]
                elif self._param_decls and self._param_decls.get(a):
                    t = self._param_decls[a][-1][2]
            out.append(_normal_type(t) if t else "")
        return tuple(out)

    # --- simple locals (_LOCAL, plain dim3s, reassignments)
    def locals_before(self, pos: int) -> tuple[tuple[str, str], ...]:
        rel = self._rel(pos)
        while self._local_next < len(self._locals) and self._locals[self._local_next].end() <= rel:
            m = self._locals[self._local_next]
            self._local_next += 1
            value = m.group(2) or (f"dim3({m.group(3)})" if m.group(3) is not None else None) \
                or (f"dim3({m.group(4)})" if m.group(4) is not None else None)
            if value is not None:
                if m.group(1) in self._found:
                    self._declared_twice.add(m.group(1))
                self._found[m.group(1)] = " ".join(value.split())
        found = dict(self._found)
        # A dim3 declared plain (`dim3 threads;`) and set member by member (`threads.x = N;`): one
        # value when each member is assigned at most once before the launch (CUDA: a plain dim3 is
        # (1, 1, 1), runtime API dim3's default constructor) anywhere in the function: a launch in a
        # loop sees the assignments after it too.
        if 0 <= self._dim3_at and self._dim3_at + 4 <= rel:
            if self._plain_dim3 is None:
                self._plain_dim3 = [(m.end(), m.group(1)) for m in _PLAIN_DIM3.finditer(self.text)]
            for end, name_ in self._plain_dim3:
                if end > rel:
                    break
                if name_ in found:
                    continue
                value, last_member = self._plain_dim3_value(name_)
                if value is None or last_member > rel:
                    continue  # assigned as a whole, more than once, through a pointer, or after the launch
                found[name_] = value
        # A name assigned again after its declaration has no single value.
        assigned = self._declared_twice
        return tuple((k_, v) for k_, v in found.items() if k_ not in assigned and not self._reassigned_before(k_, rel))

    def _plain_dim3_value(self, name_: str) -> tuple[str | None, int]:
        """(the value of a plain dim3 set member by member in the whole function, None: none; the start
        of its last member assignment)."""
        hit = self._dim3_memo.get(name_)
        if hit is not None:
            return hit
        if self._whole is None:
            close_ = _match_forward(self.code, self.start, "{", "}")
            self._whole = self.code[self.start:close_] if close_ > 0 else self.code[self.start:]
        whole = self._whole
        n = re.escape(name_)
        members: dict[str, list[str]] = {}
        for a in _named_pattern(rf"\b{n}\s*\.\s*([xyz])\s*=(?!=)\s*([^;{{}}]+);").finditer(whole):
            members.setdefault(a.group(1), []).append(" ".join(a.group(2).split()))
        last = max((a.start() for a in _named_pattern(rf"\b{n}\s*\.\s*[xyz]\s*=").finditer(whole)), default=-1)
        value: str | None = None
        if not (any(len(v) > 1 for v in members.values()) or _named_pattern(
                rf"\b{n}\s*(?:=(?!=)|\.\s*[xyz]\s*(?:[-+*/%&|^]|<<|>>)=|\.\s*[xyz]\s*(?:\+\+|--))").search(
                whole) or _named_pattern(rf"(?:\+\+|--)\s*{n}\s*\.").search(whole) or
                _named_pattern(rf"&\s*{n}\b").search(whole)) and members:
            value = "dim3(" + ", ".join(members.get(d, ["1"])[0] for d in "xyz") + ")"
        self._dim3_memo[name_] = (value, last)
        return value, last

    def _reassigned_before(self, name_: str, rel: int) -> bool:
        """Whether `name_` is assigned (not declared) in the function's text before `rel`."""
        end = self._reassigned.get(name_)
        if end is None:
            end = -1
            if _maybe_reassigned(self.text, name_):
                n = re.escape(name_)
                decls = [(m.start(), m.end()) for m in _named_pattern(
                    rf"\b(?:{_STRIPPED_TYPES.pattern})\s+{n}\s*=").finditer(self.text)]
                stripped = _strip_decls(self.text, name_)
                m = _named_pattern(rf"\b{n}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*{n}\b|"
                                   rf"\b{n}\s*(?:\+\+|--)").search(stripped)
                if m is not None:
                    end = m.end()  # back to a position of the text: each declaration became one space
                    for a, b in decls:
                        if a < end:
                            end += b - a - 1
            self._reassigned[name_] = end
        return 0 <= end <= rel

    def host_types(self) -> tuple[str, ...]:
        if self._host_types is None:
            self._host_types = _declared_types(self.fn.args, self.fn.params_text, "") if self.fn.tparams else ()
        return self._host_types
