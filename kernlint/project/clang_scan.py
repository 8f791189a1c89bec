"""The project index's launch reader: a file's launches and explicit instantiations as libclang reads them.

The text scan (scan.py) finds every launch and the host code around it (the host function, its template
parameters, its calls); values are what it cannot know: `const uint BM = 128;` (a typedef), an
enumerator, `Traits::kN` (a static constexpr member), a `using` alias, a macro defined in a header. So a
file the cheap pre-filter picks (one that spells `<<<` or an explicit instantiation `template ... ;`) is
parsed by clang with the linted file's own launch reader (frontend/clang_launches.py, no kernel lowered),
and each launch the text scan found takes clang's values where clang has them: the template arguments of
the specialization the launch calls, the folded grid, block, shared bytes and scalar arguments. Each
launch keeps its own values (`if (big) { const uint BM = 128; k<BM><<<...>>>(); } else { const uint BM =
64; ... }` gives two bindings). Launches clang sees and the text does not (spelled by a macro) are added.
Explicit instantiations' arguments are folded by clang too: each is written after the file's text as a
constant (`constexpr long long p = (long long)(ARG);`) and clang's value read back.

Clang reads the file with its own directory and the project root as include directories (the index is
cached by file content alone, so nothing else may change what it reads); missing headers are stubbed as
for linting. Anything clang cannot read leaves the text scan's facts as they were.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Iterator

from kernlint.base.lazy_re import lazy_compile
from kernlint.project.facts import FileFacts, RawLaunch

_PROBE = "__kernlint_probe_"
_LITERAL_RE = lazy_compile(r"-?\d+[uUlL]*|true|false")


MAX_CLANG_LAUNCHES = 1000  # the most launches one file may spell and still be read by clang (see wanted)


def wanted(facts: FileFacts, text: str) -> bool:
    """The pre-filter: whether a file (its text and the text scan's facts) spells a launch or an explicit
    instantiation outside comments and strings: launches or instantiations the scan found, or a `<<<`
    elsewhere (a macro's body), or a runtime-API launch (`cudaLaunchKernel`, `cudaLaunchKernelEx`,
    `cudaLaunchCooperativeKernel`). A file with more launches than MAX_CLANG_LAUNCHES (a generated
    file) keeps the text scan's values: clang's walk costs about 0.7 ms of CPU per launch, so 10,000
    launches would cost 7 s of every cold index (issue 30 wants them indexed in a second or two)."""
    if len(facts.launches) > MAX_CLANG_LAUNCHES:
        return False
    if facts.launches or facts.instantiations:
        return True
    spelled = [m for m in _API_LAUNCHES if m in text]
    if not spelled:
        return False
    from kernlint.project.scan import blank

    code = blank(text)
    return any(m in code for m in spelled)


# What a launch spells: `<<<`, or a runtime API call that launches a kernel given by name
# (frontend/clang_launches.py reads both).
_API_LAUNCHES = ("<<<", "cudaLaunchKernel", "cudaLaunchCooperativeKernel")


ISOLATE_FROM = 8  # files to read at least, for isolated workers (fewer: read in this process)
_isolate_always = False  # see isolated_reads
_in_process = False  # see read_in_process
READ_TIMEOUT_S = 20.0  # CPU seconds for one file's read in a worker
READ_MEMORY_MB = 1024


def read_all(items: list[tuple[str, str, FileFacts]], root: str) -> list[FileFacts]:
    """`read_with_clang` of each (path, text, text-scan facts) in `items`, in order.

    Many files (a cold index) are read in isolated worker processes (kernlint/system/isolation.py), one per core:
    libclang's crash or hang on one file costs only that file's clang values (its text-scan facts stay),
    and this process never loads libclang for the index, so the lint workers forked after it stay cheap.
    A few files, or a process that may not start workers (a daemonic lint worker), read them here."""
    import multiprocessing

    if (len(items) >= ISOLATE_FROM or _isolate_always) and not _in_process \
            and not multiprocessing.current_process().daemon:
        try:
            return _read_isolated(items, root)
        except Exception:  # noqa: BLE001 - no workers to be had: read here
            pass
    return [read_with_clang(facts, path, text, root) for path, text, facts in items]


def read_in_process() -> None:
    """From now on this process reads every file here, never in workers: for a long-lived process with
    threads (`kernlint server`), which must not fork workers (a lock another thread holds at the fork
    stays held in the child forever)."""
    global _in_process
    _in_process = True


@contextlib.contextmanager
def isolated_reads() -> Iterator[None]:
    """Within it, every clang read of an index build goes to isolated workers, however few: the CLI's
    parent process, which forks lint workers after the index is built, then never loads libclang (a
    process that has loaded it starts its workers from a forkserver: slower, isolation.py)."""
    global _isolate_always
    before, _isolate_always = _isolate_always, True
    try:
        yield
    finally:
        _isolate_always = before


def _read_task(task: tuple[FileFacts, str, str, str]) -> FileFacts:
    facts, path, text, root = task
    return read_with_clang(facts, path, text, root)


def _read_isolated(items: list[tuple[str, str, FileFacts]], root: str) -> list[FileFacts]:
    from kernlint.system.isolation import Failure, Limits, default_jobs, run_isolated

    tasks = [(facts, path, text, root) for path, text, facts in items]
    out = [facts for _p, _t, facts in items]
    for i, got in run_isolated(_read_task, tasks, min(default_jobs(), len(tasks)),
                               Limits(READ_TIMEOUT_S, READ_MEMORY_MB)):
        if not isinstance(got, Failure):
            out[i] = got
    return out


def read_with_clang(facts: FileFacts, path: str, text: str, root: str) -> FileFacts:
    """`facts` (the text scan's) with clang's launches and instantiation values; `facts` unchanged when
    clang cannot read the file."""
    from kernlint.frontend import parse_source

    probes = []
    for i, (_name, args, _line) in enumerate(facts.instantiations):
        for j, a in enumerate(args):
            if not _LITERAL_RE.fullmatch(a.strip()):
                probes.append((i, j, f"{_PROBE}{i}_{j}"))
    extra = "".join(f"\nconstexpr long long {v} = (long long)({facts.instantiations[i][1][j]});"
                    for i, j, v in probes)
    dirs = tuple(dict.fromkeys(d for d in (os.path.dirname(os.path.abspath(path)), root) if d))
    try:
        tu = parse_source(text + extra, path, include_dirs=dirs, launches_only=True)
    except Exception:  # noqa: BLE001 - the index only adds context: keep the text scan's facts
        return facts
    values: dict[str, int] = {}
    for name, g in tu.globals.items():
        if name.startswith(_PROBE):
            v = _value_of(g)
            if v is not None:
                values[name] = v
    insts = list(facts.instantiations)
    for i, j, v in probes:
        if v in values:
            name, args, line = insts[i]
            insts[i] = (name, args[:j] + (str(values[v]),) + args[j + 1:], line)
    launches = _merge_launches(facts.launches, tu.launches)
    return dataclasses.replace(facts, launches=launches, instantiations=tuple(insts), read_by_clang=True)


def _value_of(g: object) -> int | None:
    """The integer a probe constant was initialized to, as the front end folded it (None: not folded)."""
    from kernlint.ir import nodes as ir

    init = getattr(g, "init", None)
    while isinstance(init, ir.Cast):
        init = init.operand
    value = init.value if isinstance(init, ir.Lit) else None
    if isinstance(value, bool):
        return int(value)
    return value if isinstance(value, int) else None


def _merge_launches(raw: tuple[RawLaunch, ...], seen: tuple) -> tuple[RawLaunch, ...]:
    """The text scan's launches with clang's values (`seen`: ir.Launch of the same file), matched by
    line and kernel; clang's launches the scan missed are added as their values."""
    out = []
    used: set[int] = set()
    by_line: dict[int, list] = {}  # line -> clang's launches spanning it, in order (one pass, not one per launch)
    for c in seen:
        lines = set(range(c.span.line, max(c.span.end_line, c.span.line) + 1))
        if getattr(c, "spelled_line", 0):
            lines.add(c.spelled_line)  # written in a macro's argument: the text scan's line is this one
        for line in sorted(lines):
            by_line.setdefault(line, []).append(c)
    for r in raw:
        # The scan's line is the `<<<`'s; clang's launch spans from the kernel's name (maybe a line above).
        on_line = by_line.get(r.line, [])
        cands = [c for c in on_line if id(c) not in used]
        copies = [c for c in cands if c.kernel == r.kernel]
        if len(copies) > 1 and all(getattr(c, "resolved_args", ()) for c in copies):
            # One launch written once in a dispatch macro's lambda, which the macro writes once per type
            # (`AT_DISPATCH_CASE(at::ScalarType::Half, ...)`): one launch per case, each its own type.
            for c in copies:
                used.add(id(c))
                out.append(_with_values(r, c))
            continue
        match = next((c for c in cands if c.kernel == r.kernel), None)
        if match is None and len(cands) == 1 and len(on_line) == 1:
            # `kernel<<<...>>>` through a variable: clang names the kernel it holds, and its arguments
            used.add(id(cands[0]))
            out.append(_with_values(r, cands[0], written=not r.template_args))
            continue
        if match is None and len(cands) > 1 and len(on_line) == len(cands) and not r.template_args \
                and all(c.kernel == cands[0].kernel != r.kernel and c.spelled_line == r.line for c in cands):
            # One launch written once in a macro's argument that the macro expands several times (each
            # `BOOL_SWITCH` copy binds its own `constexpr bool`): one launch per copy, each its own values.
            for c in cands:
                used.add(id(c))
                out.append(_with_values(r, c, written=True))
            continue
        if match is None:
            out.append(r)
            continue
        used.add(id(match))
        out.append(_with_values(r, match))
    for c in seen:
        # A launch only clang sees (spelled by a macro): kept when clang bound all its template arguments
        # to values (one in a host template names its parameters, which only the scan's context binds).
        if id(c) not in used and c.kernel and all(_LITERAL_RE.fullmatch(a.strip()) for a in c.template_args):
            out.append(_with_values(RawLaunch(c.kernel, tuple(c.template_args), (), (), c.span.line), c))
    out.sort(key=lambda r: r.line)
    return tuple(out)


def _with_values(r: RawLaunch, c: object, written: bool = False) -> RawLaunch:
    """`r` with what clang folded in launch `c` (an ir.Launch) written as literals. `written`: `r` names no
    template arguments (a launch through a variable) and takes clang's as clang spelled them, names of a
    host template's parameters included (the scan's host context binds those)."""
    targs = list(r.template_args)
    ctargs = tuple(getattr(c, "template_args", ()))
    if len(ctargs) >= len(targs):
        for i, a in enumerate(ctargs):
            if _LITERAL_RE.fullmatch(a.strip()):
                if i < len(targs):
                    targs[i] = a
                else:
                    targs.append(a)
            elif written and i >= len(targs):
                targs.append(a)
            elif i >= len(targs):
                break
    for i in getattr(c, "resolved_args", ()):
        if i < len(targs) and i < len(ctargs):
            targs[i] = ctargs[i]  # a local type alias clang resolved (a dispatch macro's scalar_t)
    grid, block, shared = c.grid, c.block, c.shared_bytes  # type: ignore[attr-defined]
    args = list(r.args)
    for i, v in enumerate(getattr(c, "args", ())):
        if v is not None and i < len(args):
            args[i] = str(v)
    kernel = r.kernel if r.kernel == c.kernel or not c.kernel else c.kernel  # type: ignore[attr-defined]
    return dataclasses.replace(r, kernel=kernel, template_args=tuple(targs), args=tuple(args),
                               grid_value=tuple(grid) if grid is not None else None,
                               block_value=tuple(block) if block is not None else None,
                               shared_value=shared if shared is not None and len(r.config) > 2 else None,
                               block_dims=tuple(getattr(c, "block_dims", ())),
                               dim_values=tuple(getattr(c, "dim_values", ())))
