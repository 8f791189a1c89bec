"""The project scan's hand-written searches find exactly what the regular expressions they replace find
(kernlint/project/scan.py: `_named`, `_directives`, `_blank_directives`), on random text made of the
characters that matter: identifiers (ASCII and not), digits, white space of every kind, brackets,
`#` lines with continuations, quotes."""
from __future__ import annotations

import random
import re

import pytest

from kernlint.project import host_text, scan

PIECES = ["a", "b_1", "_x", "k", "9", "é", "x²", "Ⅻ", " ", "\t", "\r", "\x0b", "\u00a0", "\u2003", "\n", "\n",
          "<", "<", "(", "(", ")", ">", "#", "#", "\\", "\\\n", "include", "define", "<v.h>", '"w.h"', "X(",
          "template", "if", ";", "{", "}", "*", "=", "ifdef", "1", "\n#define ", "\n #include", "\n\t# define\t",
          "\n# include ", "N ", "FOO", "FOO(x) ", "\n#if"]
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*)$", re.M)
PP_LINE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)


def _texts(seed: int, n: int = 400) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 80))) for _ in range(n)]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("opener", ["<", "("])
def test_named_is_the_identifier_regex(seed: int, opener: str) -> None:
    pattern = re.compile(r"\b([A-Za-z_]\w*)\s*" + re.escape(opener))
    for text in _texts(seed):
        want = [(m.group(1), m.start(), m.end() - 1) for m in pattern.finditer(text)]
        assert list(scan._named(text, opener)) == want, repr(text)


@pytest.mark.parametrize("seed", range(5))
def test_directives_are_the_line_start_regexes(seed: int) -> None:
    for text in _texts(seed):
        for new, old in ((scan._INCLUDE, INCLUDE), (scan._DEFINE, DEFINE)):
            want = [(m.start(), m.groups(), m.end()) for m in old.finditer(text)]
            got = [(line, m.groups(), m.end()) for line, m in scan._directives(new, text)]
            assert got == want, repr(text)
        want_code = PP_LINE.sub(lambda m: "\n".join(" " * len(x) for x in m.group(0).split("\n")), text)
        assert scan._blank_directives(text) == want_code, repr(text)


DECL_PIECES = ["int", "float", "const", "unsigned", "struct", "std::vector", "<int>", "<", ">", " ", "  ", "\n", "*", "&",
               "__restrict__", "x", "p_1", "=", ";", ",", "(", ")", "{", "}", "[", "0", "é", "\t"]


@pytest.mark.parametrize("seed", range(5))
def test_declarations_are_the_declaration_regex(seed: int) -> None:
    pattern = re.compile(r"(?:^|[;{}(,])" + host_text._declaration_of(r"([A-Za-z_]\w*)"))
    rng = random.Random(seed)
    found = 0
    for _ in range(1000):
        text = "".join(rng.choice(DECL_PIECES) + rng.choice(["", " "]) for _ in range(rng.randint(0, 40)))
        want = [(m.span(), m.groups()) for m in pattern.finditer(text)]
        assert [(m.span(), m.groups()) for m in host_text._declarations_in(text)] == want, repr(text)
        found += len(want)
    assert found > 50  # the random texts do hold declarations
