"""Whether a file can define a kernel at all, read from text: a file that cannot is linted without clang.

A kernel is a function declared `__global__`: its definition spells that keyword (or the attribute the
CUDA headers define it as), or a macro does. So a file can only define one if the keyword is spelled in
its own text, in a header its `#include`s reach, in a `-D` macro, or in a `#define` of a file it may be
parsed through (an includer, `project/units.parse_in_project`). When none spells it, clang would find no
kernel in the file: the lint's answer is "no kernels", without parsing the file and the headers it pulls
in (a project's host files and helper headers, a third of the files of a typical run).

Unknown is "may": an include past the scan's limits, an unreadable header. Headers clang finds only in
the system's directories are not read: kernels are lowered from the linted file alone, so theirs never
count, and a system header's macro that makes a kernel out of a plain function is not a thing CUDA code does.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir.directives import define_spells
from kernlint.ir.includes import read_header as _read, walk_includes

# `__global__`, and what cuda_runtime's headers define it as (`__location__(global)`, that is
# `__attribute__((global))`), however spaced.
_KERNEL_RE = re.compile(r"__global__|__location__\s*\(\s*global\b|__attribute__\s*\(\s*\(\s*global\b")

# `#include MACRO`, `#include_next`, `#import`: includes INCLUDE_RE does not follow.
_COMPUTED_INCLUDE_RE = lazy_compile(r'^[ \t]*#[ \t]*(?:include(?![ \t]*[<"])|import\b)', re.M)



def may_define_kernels(text: str, path: str, include_dirs: Sequence[str], macros: Sequence[str],
                       includers: Sequence[str]) -> bool:
    """Whether the file `path` (its text `text`) may define a kernel: False only when no text that can reach
    its parse spells `__global__` (see the module's docstring). `macros`: the `-D` definitions; `includers`:
    the files it may be parsed through."""
    if any(_KERNEL_RE.search(m) for m in macros):
        return True
    # The parse searches the main file's directory after the include directories (parse_source), also
    # for `<name>`; with `-nostdinc` there is nothing else but kernlint's stubs, which define no kernel.
    here = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
    if _closure_spells(text, here, (*include_dirs, here), in_defines=False):
        return True
    for includer in includers:
        got = _read(includer)
        at = os.path.dirname(os.path.abspath(includer))
        if got is None or got[1] or _closure_spells(got[0], at, (*include_dirs, at), in_defines=True):
            return True
    return False


def _closure_spells(text: str, here: str, include_dirs: Sequence[str], in_defines: bool) -> bool:
    """Whether `text` or a header its includes reach (ir/includes.walk_includes: resolved as the parse's
    include pre-scan resolves them) spells the keyword; `in_defines`: only inside a `#define` (with its
    continuation lines). True when the scan cannot tell: an include named by a macro, a header past
    SCAN_HEADERS, cut at SCAN_BYTES or unreadable. Includes found nowhere, or that are not regular files,
    are read by clang as empty stubs."""
    if _spells(text, in_defines) or _COMPUTED_INCLUDE_RE.search(text):
        return True
    for step in walk_includes(text, here, include_dirs):
        if step.kind in ("limit", "unreadable") or step.kind == "read" and (
                step.cut or _spells(step.text, in_defines) or _COMPUTED_INCLUDE_RE.search(step.text)):
            return True
    return False


def _spells(body: str, in_defines: bool) -> bool:
    if not in_defines:
        return _KERNEL_RE.search(body) is not None
    return define_spells(body, _KERNEL_RE)
