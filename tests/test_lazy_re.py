"""kernlint.base.lazy_re: a lazily compiled pattern answers as `re.compile` does, and compiles only at first use."""
from __future__ import annotations

import re

import pytest

from kernlint.base import lazy_re
from kernlint.base.lazy_re import lazy_compile


@pytest.mark.parametrize(("pattern", "flags", "text"), [
    (r"\b(KL)(\d{3})\b", re.IGNORECASE, "see kl101 and KL2011, KL305"),
    (r"^[ \t]*#[ \t]*include", re.M, "int a;\n  # include <x>\n#include y"),
    (rb"\\\r?\n|\\\r", 0, b"a\\\nb\\\rc"),
])
def test_answers_as_the_compiled_pattern(pattern: str | bytes, flags: int, text: str | bytes) -> None:
    lazy, eager = lazy_compile(pattern, flags), re.compile(pattern, flags)
    assert lazy.pattern == eager.pattern
    for _ in range(2):  # before and after the first compile
        assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in eager.finditer(text)]
        assert lazy.findall(text) == eager.findall(text)
        assert lazy.sub(text[:1] * 2, text) == eager.sub(text[:1] * 2, text)
        assert lazy.split(text) == eager.split(text)
        assert (lazy.flags, lazy.groups, dict(lazy.groupindex)) == (eager.flags, eager.groups, dict(eager.groupindex))
        for method in ("match", "fullmatch", "search"):
            got, want = getattr(lazy, method)(text, 1), getattr(eager, method)(text, 1)
            assert (got and got.span()) == (want and want.span())


def test_compiled_once_at_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    real = re.compile
    monkeypatch.setattr(lazy_re.re, "compile", lambda p, f=0: compiled.append(p) or real(p, f))
    pattern = lazy_compile(r"a+(b)")
    assert pattern.pattern == r"a+(b)" and compiled == []  # `pattern` is known without compiling
    assert pattern.search("xaab").group(1) == "b"
    assert pattern.match("ab") and not pattern.match("b") and pattern.sub("-", "ab ab") == "- -"
    assert compiled == [r"a+(b)"]
    assert "search" in vars(pattern)  # later calls go straight to the compiled pattern's bound method


def test_bad_pattern_fails_at_first_use() -> None:
    pattern = lazy_compile(r"(unclosed")
    with pytest.raises(re.error):
        pattern.search("x")


def test_every_lazy_pattern_in_kernlint_compiles() -> None:
    """A lazy pattern's syntax error would show only when a rare path first uses it: compile them all here."""
    import importlib
    from pathlib import Path

    root = Path(lazy_re.__file__).resolve().parents[1]
    found = 0
    for path in sorted(root.rglob("*.py")):
        if "lazy_compile(" not in path.read_text(encoding="utf-8") or path.name == "lazy_re.py":
            continue
        module = importlib.import_module(".".join(("kernlint", *path.relative_to(root).with_suffix("").parts)))
        for value in vars(module).values():
            for p in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(p, lazy_re.LazyPattern):
                    assert p.groups >= 0  # compiles it
                    found += 1
    assert found >= 70  # the module-level patterns made lazy for issue 31 (a drop means the scan broke)
