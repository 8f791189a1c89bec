"""Parse a .cu/.cuh file with libclang and lower its kernels and device functions to the IR (the kernels
at once, other device functions when first asked for: kernlint/ir/function_table.py).

Decisions (see DESIGN.md): parse as CUDA device code (`--cuda-device-only`) against kernlint's own
shim header, never a CUDA installation; every `#include` that cannot be found is fed to clang as an
empty in-memory file, so a missing header costs only the names it would have declared.
"""
from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import os
import re
import weakref
from typing import Any, Callable

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir import nodes as ir
from kernlint.ir.dependent_types import PARTIAL as PARTIAL_SPECIALIZATION
from kernlint.ir.function_table import FunctionTable, key_file
from kernlint.frontend import lambdas, parse_cache, shared_ir, shim_pch
from kernlint.ir.includes import scan_includes
from kernlint.ir.known_cub import is_cub_stub
from kernlint.ir.known_pipeline import is_async_stub
from kernlint.ir.known_headers import stub_text
from kernlint.model.occupancy import DEFAULT_ARCH

try:  # libclang is a hard dependency, but keep the import error readable.
    import clang.cindex as ci
except ImportError as exc:  # pragma: no cover - exercised only on broken installs
    raise ImportError("kernlint needs the 'libclang' package: pip install libclang") from exc

from kernlint.frontend.clang_base import _clang_arch_args
from kernlint.frontend.clang_diagnostics import _NOT_FOUND_RE, _diagnostics, _problems
from kernlint.frontend.launch_marks import LAUNCH_BYTES, launches_outside
from kernlint.frontend.clang_base import (
    MAX_STATEMENTS,  # noqa: F401 (re-exported: the statement limit's tests read it here)
    STUB_DIR,
    _LOC_FILE,
    _LOC_OUT,
    FrontendError,
    K,
    MainText,
    Prefetched,
    _Ctx,
    _lib,
    _span,
    _TypeConverter,
    shim_path,
)
from kernlint.frontend.clang_launches import (
    _launches,
)
from kernlint.frontend.callees import _is_device
from kernlint.frontend.lowering import _function_key, _Lowering
from kernlint.frontend.template_args import _split_template_args


def _is_kernel(c: ci.Cursor, kids: list[ci.Cursor] | None = None) -> bool:
    """Whether `c` is `__global__` (`kids`: its children, when already listed)."""
    return any(k.kind == K.CUDAGLOBAL_ATTR for k in (c.get_children() if kids is None else kids))




def _launch_bounds(c: ci.Cursor, lines: list[str]) -> tuple[str, ...]:
    """`__launch_bounds__(...)` arguments as written, read from the text before the kernel's name.

    libclang returns no tokens for an extent that begins inside a macro expansion (`__global__`
    is one), so the declaration's text is scanned instead.
    """
    start, name = c.extent.start, c.location
    if start.line <= 0 or name.line < start.line:
        return ()
    text = "\n".join(lines[start.line - 1:name.line])
    m = re.search(r"__launch_bounds__\s*\(", text)
    if not m:
        return ()
    depth = 0
    args: list[str] = [""]
    for ch in text[m.end():]:
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append("")
            continue
        args[-1] += ch
    return tuple(" ".join(a.split()) for a in args if a.strip())


def _annotation_above(lines: list[str], line: int) -> str:
    """The `// kernlint: ...` (or GPUVerify `//--blockDim=`) comments directly above `line` (1-based)."""
    found: list[str] = []
    i = line - 2
    while i >= 0:
        s = lines[i].strip()
        if s.startswith("//") or s.startswith("template") or s.startswith("__launch_bounds__") or s.startswith("/*") or s.startswith("*"):
            if "kernlint:" in s or "--blockDim" in s or "--gridDim" in s:
                found.append(s)
            i -= 1
            continue
        break
    return " ".join(reversed(found))


_MAX_PARSE_ROUNDS = 64
"""Bound on re-parses that each stub one more include clang reported missing. The pre-scan finds
almost all of them, so real files need one parse; the bound only stops a pathological loop."""


def _stub_includes(text: str, path: str, include_dirs: tuple[str, ...]) -> tuple[set[str], set[str]]:
    """Includes clang should read as empty files: names to create under STUB_DIR, and absolute
    paths to shadow (missing absolute includes, FIFOs, devices, directories: never opened)."""
    found = scan_includes(text, path, include_dirs)
    return set(found.names), set(found.paths)


# `__shared__ alignas(16) float t[...]` is valid CUDA (nvcc accepts it; cuda-samples use it), but the
# shim spells `__shared__` as a GNU attribute, after which clang refuses a C++11 attribute. Swapping the
# two specifiers is the same declaration and keeps every offset of the file (same length, same line).
_SPACE_THEN_ALIGNAS_RE = lazy_compile(
    r"\b(__shared__|__constant__|__device__|__managed__)([ \t]+)(alignas[ \t]*\((?:[^()\n]|\([^()\n]*\))*\))")


def clang_spelling(text: str) -> str:
    """`text` with CUDA spellings the shim cannot take rewritten in place (same length and lines)."""
    if "alignas" not in text:
        return text
    return _SPACE_THEN_ALIGNAS_RE.sub(lambda m: m.group(3) + m.group(2) + m.group(1), text)


def parse_source(text: str, path: str, *, include_dirs: tuple[str, ...] = (), defines: tuple[str, ...] = (),
                 arch: str = DEFAULT_ARCH, fragment: str | None = None, fragment_text: str | None = None,
                 kernel: str | None = None, launches_only: bool = False,
                 instance_region: tuple[int, int] | None = None,
                 pre_includes: tuple[str, ...] = ()) -> ir.TranslationUnit:
    """Parse CUDA source `text` (named `path` in messages) into a TranslationUnit.

    Every include that cannot be found is stubbed (an empty file): first those a text pre-scan
    finds, then, parse after parse, any further one clang stops at (a fatal error ends clang's
    work on the file: no more templates, no more errors), until none is left.

    With `fragment` (a file `text` includes, e.g. a fragment parsed in its includer's context), only
    the kernels, launches and problems located in `fragment` are lowered, and the unit is named after
    it; `fragment_text` is then that file's content (the disk copy is not read).

    With `kernel` (a function key: a template kernel's text made concrete, `frontend.instantiate`), only
    that kernel is wanted from the parse: it alone is lowered up front (the file's other kernels are
    left to be lowered if something asks for them) and no host code is searched for launches (the
    launches that bind the kernel are the original parse's). `instance_region`: the (start, end) character
    offsets of that concrete kernel in the lowered file's text (`frontend.instantiate.instantiate_region`):
    the functions after it are shared with the parses of the kernel's other bindings (see _deferring_table).

    `launches_only` (the project index's reader, project/clang_scan.py): the unit's launches, instantiations
    and macros only; no kernel is lowered.

    `pre_includes`: headers read before the file's first line (clang's `-include`), searched like the
    file's own includes and stubbed the same way when missing: the declarations a template binding from
    another file names (`scalar_t = c10::Half` of a launch in a PyTorch extension's .cu, for a header
    kernel whose own file includes no PyTorch header). Every line keeps its number.
    """
    path = path or "<stdin>"
    parse_path = _clang_name(os.path.abspath(path)) if path != "<stdin>" else "/__kernlint_stdin__.cu"
    include_dirs = tuple(_clang_name(os.path.abspath(d)) for d in include_dirs)
    base = ["-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib", "-nostdinc", "-nostdinc++",
            *_clang_arch_args(arch), "-std=c++17", "-fsyntax-only", "-Wno-everything", "-ferror-limit=0"]
    # The main file's directory is searched after the user's include directories for `<name>` too
    # (nvcc builds nearly always pass it: the CUDA SDK's common.mk and Rodinia's makefiles add `-I.`;
    # kernlint's own nvcc run passes it first). The stub directory comes last, so a stub never hides
    # a real header of the same name.
    here = os.path.dirname(parse_path) if path != "<stdin>" else ""
    tail = [f"-I{d}" for d in include_dirs] + ([f"-I{here}"] if here and here not in include_dirs else [])
    tail += [f"-I{STUB_DIR}"]
    tail += [f"-D{d}" for d in defines]
    names, paths = _stub_includes(text, parse_path, include_dirs + ((here,) if here else ()))
    for name in pre_includes:
        tail += ["-include", name]
        names.add(name)  # (the stub: searched after every include directory, so a real header wins)
    text = clang_spelling(text)
    if fragment_text is not None:
        fragment_text = clang_spelling(fragment_text)
    options = ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD | ci.TranslationUnit.PARSE_INCOMPLETE

    def unsaved_files() -> list[tuple[str, str]]:
        unsaved = [(parse_path, text)] + [(f"{STUB_DIR}/{n}", stub_text(n)) for n in sorted(names)]
        unsaved += [(p, "") for p in sorted(paths) if p != parse_path]
        if fragment is not None and fragment_text is not None:
            unsaved.append((_clang_name(os.path.abspath(fragment)), fragment_text))
        return unsaved

    unsaved = unsaved_files()
    as_text = base + ["-include", shim_path()] + tail
    text_key = parse_cache.key(parse_path, as_text, unsaved, options)
    if parse_cache.kept(*text_key):
        # These inputs were parsed with the shim as text before (the project index's read of the file, then
        # its lint, with the process's PCH built in between): that unit, as with the PCH off (the IR is
        # the same either way: shim_pch.py).
        pch = None
    else:
        pch = shim_pch.pch_for(ci, shim_path(), base + [f"-D{d}" for d in defines])  # see shim_pch.py
    args = base + (["-include-pch", pch] if pch else ["-include", shim_path()]) + tail
    # With the PCH, the index leaves out the shim's declarations (they come from the PCH).
    index = ci.Index.create(excludeDecls=pch is not None and shim_pch.EXCLUDE)
    tu = None
    for _round in range(_MAX_PARSE_ROUNDS):
        if _round:
            unsaved = unsaved_files()  # (stubs added by the round before)
        # (the first round's inputs are `text_key`'s when the shim is included as text)
        key, handed = text_key if _round == 0 and pch is None else parse_cache.key(parse_path, args, unsaved, options)
        try:
            # (the unit of an earlier parse of the same inputs when there is one: frontend/parse_cache.py)
            tu = parse_cache.parse(key, handed, [n for n, _t in unsaved if n not in handed],
                                   lambda: index.parse(parse_path, args=args, unsaved_files=unsaved, options=options),
                                   tuple(a[2:] for a in args if a.startswith("-I")))
        except ci.TranslationUnitLoadError as exc:
            if pch is None:
                raise FrontendError(f"clang could not parse the file: {exc}") from exc
            tu = None
        diagnostics = _diagnostics(tu) if tu is not None else []
        if pch is not None and (tu is None or any(severity >= 4 and _PCH_PROBLEM_RE.search(spelling)
                                                  for severity, spelling, _d in diagnostics)):
            shim_pch.disable()  # clang would not take the PCH: the shim as text, from now on
            pch = None
            args[args.index("-include-pch"):args.index("-include-pch") + 2] = ["-include", shim_path()]
            index = ci.Index.create()
            continue
        grew = False
        for _severity, spelling, _d in diagnostics:
            m = _NOT_FOUND_RE.match(spelling)
            if not m:
                continue
            name = m.group(1)
            target = paths if os.path.isabs(name) else names
            if name not in target:
                target.add(name)
                grew = True
        if not grew:
            break
    assert tu is not None
    included = [inc.include.name for inc in tu.get_includes()]  # (the files the parse read: asked below)
    # What the shim's declarations depend on (it includes nothing, so no include directory): see _shim_run.
    shim_key = (*base, *(f"-D{d}" for d in defines), "pch" if pch is not None else "text")
    # Everything but the lowered file's own text (shared_ir): with a fragment, the includer's text is context.
    identity = shared_ir.parse_identity(parse_path, fragment, args, sorted(names), sorted(paths),
                                        text if fragment is not None else "")
    if fragment is not None:
        fpath = _clang_name(os.path.abspath(fragment))
        ftext = (fragment_text if fragment_text is not None
                 else open(os.path.abspath(fragment), encoding="utf-8", errors="replace").read())
        unit = _lower(tu, ftext, fragment, fpath, context=parse_path, shim_key=shim_key, kernel=kernel,
                      identity=identity, instance_region=instance_region, diagnostics=diagnostics)
    else:
        key = _launch_key(identity, unsaved, included, paths) if kernel is None else None
        read = _LAUNCH_READS.get(key) if key is not None else None
        unit = _lower(tu, text, path, parse_path, shim_key=shim_key, kernel=kernel, identity=identity,
                      instance_region=instance_region,
                      launch_text_only=kernel is None and read is None
                      and not launches_outside(included, text, defines, parse_path, paths),
                      launches_only=launches_only, diagnostics=diagnostics, launches_read=read)
        if key is not None and read is None:
            if len(_LAUNCH_READS) >= _MAX_LAUNCH_READS:
                _LAUNCH_READS.clear()
            _LAUNCH_READS[key] = unit.launches
    stubbed = _stubbed(included, paths)
    return dataclasses.replace(unit, stubbed=stubbed) if stubbed else unit


_LAUNCH_READS: dict[tuple, tuple[ir.Launch, ...]] = {}
"""The launches of a parse (`_launch_key`) -> as the parse's host code gave them. A file's launches are read
twice in one process: by the project index (parse_source's `launches_only`) and by its lint, and with the
same arguments (a file whose includes the index's directories find as the lint's do) both parses are the
same, and so are their launches (a function of the parse and of the file's text): the second takes the
first's instead of walking its host code again (about 0.4 ms per launch)."""
_MAX_LAUNCH_READS = 512  # parses kept; emptied when full


def _launch_key(identity: str, unsaved: list[tuple[str, str]], included: list[str], shadowed: set[str]) -> tuple:
    """What a parse's launches depend on: its arguments and stubs (`identity`, shared_ir.parse_identity), the
    files it handed clang in memory (`unsaved`: the main file's text, the stubs' contents), and each file it
    included from disk as it stands there (its name, modification time and size: a header edited between two
    parses of a long-running process makes another key)."""
    stamps = set()
    for name in included:
        if name.startswith(STUB_DIR + "/") or name in shadowed:
            stamps.add((name, -1, -1))  # (read as an empty stub: part of `identity`)
            continue
        try:
            st = os.stat(name)
            stamps.add((name, st.st_mtime_ns, st.st_size))
        except OSError:
            stamps.add((name, -2, -2))
    h = hashlib.sha1()
    for name, content in unsaved:
        h.update(f"{len(name)}:{name}{len(content)}:".encode("utf-8", "surrogateescape"))
        h.update(content.encode("utf-8", "surrogateescape"))
    return (identity, h.digest(), tuple(sorted(stamps)))


_PCH_PROBLEM_RE = lazy_compile(r"precompiled|\bPCH\b|AST file")


def _clang_name(path: str) -> str:
    """`path` as libclang can take it (UTF-8): bytes of a non-UTF-8 file name (surrogate escapes)
    become U+FFFD. The file's text is always handed over in memory, so the name only labels it."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _stubbed(included: list[str], paths: set[str]) -> tuple[str, ...]:
    """The includes clang actually read as empty stubs, as written in the source (sorted). `included`: the
    files the parse included (`tu.get_includes()`'s names)."""
    out = set()
    prefix = STUB_DIR + "/"
    for name in included:
        if name.startswith(prefix):
            out.add(name[len(prefix):])
        elif name in paths:
            out.add(name)
    return tuple(sorted(out))


def _file_namer(lib: Any) -> Callable[[ci.Cursor], str | None]:
    """A function giving the name of the file a cursor is in (None: none, a builtin), with one ctypes call
    per cursor besides its location: the name is looked up once per file handle of the translation unit
    (`cursor.location.file.name` costs three calls and a string conversion, for each of the ~700 declarations
    of the shim), and the handle is read into one buffer made once (clang_base._LOC_OUT)."""
    names: dict[int | None, str] = {}
    get = lib.clang_getInstantiationLocation
    handle = ctypes.c_void_p.from_buffer(_LOC_FILE)  # the same memory, read as an address
    out = (_LOC_OUT[0], None, None, None)

    def file_of(c: ci.Cursor) -> str | None:
        get(c.location, *out)
        key = handle.value
        if not key:
            return None
        name = names.get(key)
        if name is None:
            f = c.location.file
            if f is None:
                return None
            name = names[key] = f.name
        return name

    return file_of


_SHIM_RUNS: dict[tuple[str, ...], int] = {}
"""Parse arguments of the shim (see parse_source's `shim_key`) -> how many declarations it puts first among
a translation unit's declarations. One entry per set of arguments (architecture, defines), as shim_pch keeps."""


def _shim_run(top: list[ci.Cursor], file_of: Callable[[ci.Cursor], str | None], shim: str,
              key: tuple[str, ...] | None) -> range:
    """Indices of the translation unit's children `top` that are the shim's own declarations, which `_lower`
    skips: the run of children located in the shim that starts at the first declaration.

    libclang lists a translation unit's preprocessing entities first, then its declarations in the order the
    parse made them (clang's CIndex.cpp, CursorVisitor::VisitChildren), and the shim is parsed before the file
    (`-include`, or its PCH): its ~650 declarations come first, with the same arguments always the same ones.
    Asking each for its file costs two ctypes calls and a source-manager lookup (~15 % of the front end's time
    on the corpus); so a process counts the run once per set of arguments (`key`), and later parses check only
    its ends (its first and last child are in the shim, the next is not). Anything else, and the children are
    asked one by one as before (an empty range: nothing is skipped)."""
    start = 0
    while start < len(top) and top[start].kind.is_preprocessing():
        start += 1
    known = _SHIM_RUNS.get(key) if key is not None else None
    if known is not None:
        end = start + known
        if end <= len(top) and file_of(top[start]) == shim and file_of(top[end - 1]) == shim \
                and (end == len(top) or file_of(top[end]) != shim):
            return range(start, end)
        return range(0)
    end = start
    while end < len(top) and file_of(top[end]) == shim:
        end += 1
    if key is not None and end > start:
        _SHIM_RUNS[key] = end - start
    return range(start, end)


def _lower(tu: ci.TranslationUnit, text: str, path: str, parse_path: str, context: str = "",
           launch_text_only: bool = False, shim_key: tuple[str, ...] | None = None,
           kernel: str | None = None, identity: str = "", launches_only: bool = False,
           instance_region: tuple[int, int] | None = None,
           diagnostics: list[tuple[int, str, ci.Diagnostic]] | None = None,
           launches_read: tuple[ir.Launch, ...] | None = None) -> ir.TranslationUnit:
    """Lower the kernels of `parse_path`; `context` is the includer it was parsed through, if any
    (its own errors are not this file's problems; its macros and globals are visible here).
    `launch_text_only`: every launch the parse can make is spelled in the main file's text outside macros
    (see launch_marks.launches_outside), so host functions whose text spells none are not searched for launches.
    `kernel`: only the kernel of that key is lowered up front, and no launch is searched for (see parse_source).
    `identity`: what the parse depends on besides `text` (shared_ir.parse_identity); "" shares nothing.
    `instance_region`: see parse_source. `diagnostics`: `_diagnostics(tu)`, when already read.
    `launches_read`: the launches of the same parse, read before (see _LAUNCH_READS): the host code is not
    walked again."""
    types = _TypeConverter()
    low = _Lowering(_Ctx(parse_path, text), types)
    lines = text.splitlines()
    problems = _problems(tu, parse_path, context, diagnostics)

    kernels: list[ir.Function] = []
    launches: list[ir.Launch] = []
    instantiations: list[tuple[str, tuple[str, ...]]] = []
    globals_: dict[str, ir.VarDecl] = {}
    macros: dict[str, int] = {}
    structs: dict[str, ir.CType] = {}
    member_types: dict[str, tuple[tuple[str, ...], ir.CType]] = {}
    classes: dict[tuple[int, int | None], tuple[str, tuple[ir.TemplateParam, ...]]] = {}  # see _method
    data = text.encode("utf-8", "surrogateescape")  # parse_path's text, as bytes clang reads
    masked = None
    if instance_region is not None:
        start, end = instance_region
        masked = (len(text[:start].encode("utf-8", "surrogateescape")),
                  len(text[:end].encode("utf-8", "surrogateescape")), text.count("\n", 0, end) + 1)
    functions = _deferring_table(low, lines, problems, parse_path, classes, data, identity, masked)
    shim = shim_path()

    lib = _lib()
    file_of = _file_namer(lib)
    main = low.main = MainText(tu, parse_path, data)  # (the lowered file's tokens, spelled from `data`)

    def may_launch(c: ci.Cursor) -> bool:
        """Whether host function `c` can hold a kernel launch: only where its text spells one (`<<<`, a
        runtime-API launch), unless a macro may (`launch_text_only` False)."""
        if kernel is not None or launches_read is not None:
            return False
        if not launch_text_only:
            return True
        ext = c.extent
        span = data[ext.start.offset:ext.end.offset + 3]
        return any(m in span for m in LAUNCH_BYTES)

    main_only = not context  # macros and globals come from parse_path only: libclang's main file

    def visit(c: ci.Cursor, depth: int, children: list[ci.Cursor] | None = None, skip: range = range(0)) -> None:
        for i, child in enumerate(c.get_children() if children is None else children):
            if i in skip:
                continue  # the shim's own declarations (see _shim_run)
            # The kind first (cheap, cached): most top-level cursors are macro expansions and the
            # compiler's builtin macros, which are either never lowered or lowered only from the main
            # file; those need no file name (each costs several ctypes calls, ~1,300 per file).
            kind = child.kind
            if kind not in _LOWERED_KINDS:
                continue
            if kind == K.MACRO_DEFINITION and main_only and not lib.clang_Location_isFromMainFile(child.location):
                continue
            fname = file_of(child)
            if fname is None or fname == shim or fname.startswith(STUB_DIR) and not (
                    is_cub_stub(fname) or is_async_stub(fname)):
                continue  # (the CUB and async-copy stubs model accesses: lowered like a header's helpers)
            if kind in (K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL) and depth < 6:
                visit(child, depth + 1)
            elif kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
                if not child.is_definition():
                    if kind == K.FUNCTION_DECL and _is_kernel(child):
                        targs = _explicit_instantiation_args(child)
                        if targs:
                            instantiations.append((child.spelling, targs))
                    continue
                if kind == K.FUNCTION_DECL and _instantiated_at_template(child):
                    continue
                kids = list(child.get_children())  # listed once for the questions below and the lowering
                if launches_only:
                    pass  # (the project index asks for launches only)
                elif _is_device(child, kids):
                    if fname == parse_path and _is_kernel(child, kids) and kernel is not None \
                            and _function_key(child) != kernel:
                        # (another kernel of a parse made for one: lowered only if a call asks for it)
                        functions.defer(_function_key(child), child.spelling, (False, child), True)
                    elif fname == parse_path and _is_kernel(child, kids):
                        fn = _function(low, child, lines, problems, parse_path, kids)
                        functions.add(fn.key, fn)
                        _defer_local_methods(functions, low, fn, child, parse_path)
                        kernels.append(fn)
                    else:  # (a device function: lowered if something asks for it)
                        functions.defer(_function_key(child), child.spelling, (False, child), fname == parse_path)
                if fname == parse_path and not _is_kernel(child, kids) and may_launch(child):
                    launches.extend(_launches(child, data, main))
            elif kind == K.VAR_DECL and (fname == parse_path or fname == context):
                globals_[child.spelling] = low.var_decl(child)
            elif kind in (K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE) and depth < 6:
                if kind != K.CLASS_TEMPLATE and child.spelling and child.is_definition():
                    structs[child.spelling] = types.convert(child.type)
                visit(child, depth + 1)
            elif kind == K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION and child.spelling:
                # (its members are not matched: a dependent member type of this class stays unknown)
                member_types[child.spelling + PARTIAL_SPECIALIZATION] = ((), ir.UNKNOWN_TYPE)
            elif kind in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL) and child.spelling:
                under = types.convert(child.underlying_typedef_type)
                if kind == K.TYPEDEF_DECL and under.kind == "struct":
                    structs[child.spelling] = under
                owner = _member_type_owner(c)
                if owner is not None:
                    member_types.setdefault(f"{owner[0]}::{child.spelling}", (owner[1], under))
            elif kind == K.MACRO_DEFINITION and (fname == parse_path or fname == context):
                toks = main.tokens(child)
                if len(toks) >= 2 and toks[0] == child.spelling and toks[1] != "(":
                    value = fold_tokens(toks[1:], macros)
                    if value is not None:
                        macros[child.spelling] = value
            elif kind in _METHOD_KINDS and child.is_definition():
                if _instantiated_at_template(child):
                    continue
                kids = list(child.get_children())
                if _is_device(child, kids):
                    functions.defer(_function_key(child), child.spelling, (True, child), fname == parse_path)
                if kind == K.CXX_METHOD and fname == parse_path and may_launch(child):
                    launches.extend(_launches(child, data, main))

    root = tu.cursor
    top = list(root.get_children())
    visit(root, 0, top, _shim_run(top, file_of, shim, shim_key))
    file_annotation = " ".join(
        ln.strip() for ln in lines[:40] if ln.strip().startswith("//") and ("kernlint:" in ln or "--blockDim" in ln)
    )
    return ir.TranslationUnit(path=path, kernels=tuple(kernels), functions=functions, globals=globals_,
                              launches=tuple(launches) if launches_read is None else launches_read, problems=tuple(problems), file_annotation=file_annotation,
                              instantiations=tuple(instantiations) + _text_instantiations(text),
                              macros=macros, structs=structs, member_types=member_types)


def _instantiated_at_template(c: ci.Cursor) -> bool:
    """Whether function or method `c` is a specialization clang made from a template (located at the
    template's definition), not one written in the source.

    The translation unit never lists these, but an index that leaves out a PCH's declarations
    (shim_pch.EXCLUDE) lists the parse's top-level declarations, and there each explicit instantiation
    (`template __global__ void k<float>(float*);`, or each member of `template class C<double>;`) appears
    as a definition with the template's body and place and concrete types. Explicit instantiations are read from the text instead
    (`_text_instantiations`); an explicit specialization (`template <> ... k<float>(...) {...}`) is
    written where it stands, so it is still lowered."""
    pattern = ci.conf.lib.clang_getSpecializedCursorTemplate(c)
    if pattern is None:
        return False
    # A member function's pattern is its declaration in the class template; its body may be defined
    # outside the class (`template <typename R> void Engine<R>::run(...) {...}`), where the made one sits.
    return (pattern.get_definition() or pattern).location == c.location


_OPEN: list[weakref.ref[FunctionTable]] = []
"""The tables of parses whose deferred functions can still be lowered (each keeps its libclang translation
unit alive): `release_parses` ends them."""


def _deferring_table(low: _Lowering, lines: list[str], problems: list[ir.ParseProblem], parse_path: str,
                     classes: dict[tuple[int, int | None], tuple[str, tuple[ir.TemplateParam, ...]]],
                     data: bytes = b"", identity: str = "",
                     masked: tuple[int, int, int] | None = None) -> FunctionTable:
    """A table whose deferred functions (`(is_method, cursor)`) are lowered with this parse's lowering state:
    its type converter, its per-declaration caches and the classes already named (see _method).
    With `identity` (shared_ir.parse_identity) and `data` (the main file's text as clang read it), a free
    function of the main file is shared with other parses that read the same text up to its end.

    `masked` (byte start, byte end, last line of a template kernel made concrete: parse_source's
    `instance_region`): a function that starts on a later line is shared with the parses of the kernel's
    other bindings, its text up to its end read with the binding's part left out. What the binding makes
    is invisible there: the namespace it opens (`namespace __kl_inst_0 { constexpr int BM = 128; ...`,
    frontend/instantiate.py) closes right after the kernel, so the later code names none of it, and
    every later line, so every later span, is the same whatever the binding (what clang reports inside
    the function is part of the key, as always)."""

    def lower(payload: tuple[bool, ci.Cursor]) -> ir.Function:
        fn = lower_one(payload)
        _defer_local_methods(table, low, fn, payload[1], parse_path)
        return fn

    def lower_one(payload: tuple[bool, ci.Cursor]) -> ir.Function:
        is_method, c = payload
        low.budgeted = False  # (asked for by the evaluator, after the parse: see _Lowering.budgeted)
        if c.kind == K.LAMBDA_EXPR:
            fn = _function(low, c, lines, problems, parse_path)
            caps = lambdas.captures(c)
            return dataclasses.replace(fn, name=ir.LAMBDA_CALL, key=lambdas.call_key(c),
                                       captures=tuple((n.name, n.mode) for n in caps.names) if caps else (),
                                       mutable=bool(caps and caps.mutable))
        if is_method:
            return _method(low, c, lines, problems, parse_path, None, classes)
        ext = c.extent
        if not identity or c.location.file is None or c.location.file.name != parse_path \
                or ext.end.file is None or ext.end.file.name != parse_path:
            return _function(low, c, lines, problems, parse_path)
        inside = tuple(p for p in problems if ext.start.line <= p.line <= ext.end.line)
        prefix = data[:ext.end.offset]
        if masked is not None and ext.start.line > masked[2] and ext.start.offset >= masked[1]:
            prefix = data[:masked[0]] + b"\0kernlint-instance@%d\0" % masked[0] + data[masked[1]:ext.end.offset]
        return shared_ir.lowered(identity, _function_key(c), prefix, inside,
                                 lambda: _function(low, c, lines, problems, parse_path))

    table = FunctionTable(loader=lower)
    _OPEN[:] = [r for r in _OPEN if r() is not None]
    _OPEN.append(weakref.ref(table))
    return table


def _defer_local_methods(table: FunctionTable, low: _Lowering, fn: ir.Function, c: ci.Cursor, parse_path: str) -> None:
    """Record in `table`, to be lowered when asked for, the member functions of the classes defined inside
    function `c` (just lowered as `fn`: `struct L { __device__ static void f(...) {...} };` in a kernel's body)
    and the call operators of its lambdas (those whose captures kernlint follows: frontend/lambdas.py). `_lower`'s
    walk meets only the classes of namespaces and of other classes, never a function body's; the lowering collects
    these (`low.local_defs`)
    as it meets them. A function shared from an earlier parse (shared_ir) was not lowered here: its cursors are
    searched instead when a call of `fn` names a function placed inside `fn`'s own lines (a local method)."""
    found, low.local_defs = low.local_defs, []
    in_main = c.location.file is not None and c.location.file.name == parse_path
    if not found:
        where = key_file(fn.key)
        first, last = fn.span.line, fn.span.end_line or fn.span.line
        if fn.body is None or not any(
                _placed_within(call.target or call.written, where, first, last) for call in fn.calls()):
            return
        found = [n for n in c.walk_preorder() if n.kind == K.LAMBDA_EXPR
                 or n.kind in (K.STRUCT_DECL, K.CLASS_DECL) and n.is_definition()]
    while found:
        n = found.pop()
        if n.kind == K.LAMBDA_EXPR:
            if lambdas.call_key(n) not in table and lambdas.captures(n) is not None:
                table.defer(lambdas.call_key(n), ir.LAMBDA_CALL, (True, n), in_main)
            continue
        for m in n.get_children():
            if m.kind in (K.STRUCT_DECL, K.CLASS_DECL) and m.is_definition():
                found.append(m)  # (a class nested in the local class)
            elif m.kind in _METHOD_KINDS and m.is_definition() and _function_key(m) not in table:
                table.defer(_function_key(m), m.spelling, (True, m), in_main)


def _placed_within(key: str, file: str, first: int, last: int) -> bool:
    """Whether function key `key` (`name@file:line`) names a place in `file` between lines `first` and `last`."""
    if not key or key_file(key) != file:
        return False
    line = key.rpartition(":")[2]
    return line.isdigit() and first <= int(line) <= last


def release_parses() -> None:
    """End every parse still open in this process: functions never asked for are not lowered any more,
    and libclang's translation units are freed (call it when a file is done), but for the few most recent
    ones frontend/parse_cache.py keeps for a later parse of the same inputs."""
    for ref in _OPEN:
        table = ref()
        if table is not None:
            table.release()
    _OPEN.clear()
    shared_ir.clear()


_INSTANTIATION_RE = re.compile(
    # `^[ \t]*` (not `^\s*`, quadratic on runs of blank lines); the arguments are bounded in length.
    r"^[ \t]*template\s+(?:__global__\s+)?(?:void\s+)?(?:__global__\s+)?(?:void\s+)?([A-Za-z_]\w*)\s*<([^;{]{0,2000}?)>\s*\(",
    re.M)


def _text_instantiations(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Explicit instantiations (`template __global__ void k<128>(float*);`): libclang has no cursor for them."""
    out = []
    for m in _INSTANTIATION_RE.finditer(text):
        args = _split_template_args(re.findall(r"\w+|::|[^\s\w]", m.group(2)) + [">"])
        if args:
            out.append((m.group(1), args))
    return tuple(out)


def fold_tokens(toks: list[str], macros: dict[str, int]) -> int | None:
    """Value of an object-like macro whose body is integer arithmetic over literals and other macros.

    Bounded (kernlint.ir.intfold): values beyond 64 bits, huge literals and deep nesting are unknown (None)."""
    from kernlint.ir import intfold

    parts: list[str | int] = []
    for t in toks:
        if t in macros:
            parts.append(macros[t])
        elif t in ("true", "false"):  # bool template arguments (`loadChunk<true>`)
            parts.append(1 if t == "true" else 0)
        elif t in ("+", "-", "*", "/", "%", "(", ")", "<<", ">>") or t[:1].isdigit():
            parts.append(t)
        else:
            return None
    return intfold.evaluate(parts)


def _explicit_instantiation_args(c: ci.Cursor) -> tuple[str, ...]:
    toks = [t.spelling for t in c.get_tokens()]
    if not toks or toks[0] != "template":
        return ()
    try:
        i = toks.index(c.spelling)
    except ValueError:
        return ()
    if i + 1 < len(toks) and toks[i + 1] == "<":
        return _split_template_args(toks[i + 2:])
    return ()


def _function(low: _Lowering, c: ci.Cursor, lines: list[str], problems: list[ir.ParseProblem],
              parse_path: str, kids: list[ci.Cursor] | None = None) -> ir.Function:
    """Function definition `c` as IR (`kids`: its children, when already listed)."""
    kids = list(c.get_children()) if kids is None else kids
    params = []
    param_cursors: list[ci.Cursor] = []
    tparams = []
    body = None
    for k in kids:
        if k.kind == K.PARM_DECL:
            params.append(ir.Param(k.spelling, low.ctype(k), k.type.spelling))
            param_cursors.append(k)
        elif k.kind == K.TEMPLATE_TYPE_PARAMETER:
            tparams.append(ir.TemplateParam(k.spelling, True))
        elif k.kind == K.TEMPLATE_NON_TYPE_PARAMETER:
            tparams.append(ir.TemplateParam(k.spelling, False))
        elif k.kind == K.COMPOUND_STMT:
            body = k
    span = _span(c)
    ext = c.extent
    in_main = c.location.file is not None and c.location.file.name == parse_path
    errors = tuple((p.line, p.column, p.message) for p in problems
                   if in_main and p.syntax and ext.start.line <= p.line <= ext.end.line)
    unresolved = tuple((p.line, p.column, p.message) for p in problems
                       if in_main and not p.syntax and ext.start.line <= p.line <= ext.end.line)
    params = [_unresolved_param(p, param_cursors[i], unresolved) for i, p in enumerate(params)]
    low.statements = 0
    with Prefetched(body):  # (the lowering lists nearly every cursor of the body)
        lowered = low.stmt(body) if body is not None else None
    if lowered is not None and not isinstance(lowered, ir.Block):
        lowered = ir.Block((lowered,), span)
    is_kernel = _is_kernel(c, kids)
    return ir.Function(
        name=c.spelling, params=tuple(params), body=lowered, span=span, is_kernel=is_kernel,
        template_params=tuple(tparams), launch_bounds=_launch_bounds(c, lines) if is_kernel and in_main else (),
        parse_errors=errors, unresolved=unresolved,
        annotation=_annotation_above(lines, ext.start.line) if in_main else "", key=_function_key(c),
    )


def _unresolved_param(p: ir.Param, k: ci.Cursor, unresolved: tuple[tuple[int, int, str], ...]) -> ir.Param:
    """A parameter whose declared type is a name clang did not know (`cufftComplex *a` without
    cufft.h): clang recovers with `int`, a size that would be wrong; its type is unknown, named
    after the missing name (the evaluator says so, with how to supply it)."""
    if not unresolved:
        return p
    ext = k.extent
    for line, col, msg in unresolved:
        inside = (ext.start.line, ext.start.column) <= (line, col) <= (ext.end.line, ext.end.column)
        m = re.match(r"unknown type name '([^']+)'", msg)
        if inside and m:
            return ir.Param(p.name, ir.CType("unknown", 0, name=m.group(1)))
    return p


_METHOD_KINDS = (K.CXX_METHOD, K.CONVERSION_FUNCTION, K.CONSTRUCTOR)
_LOWERED_KINDS = frozenset((K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL, K.FUNCTION_DECL, K.FUNCTION_TEMPLATE,
                            K.VAR_DECL, K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE, K.TYPEDEF_DECL,
                            K.TYPE_ALIAS_DECL, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, K.MACRO_DEFINITION)
                           + _METHOD_KINDS)
"""The cursor kinds `_lower`'s walk acts on (at any depth); every other cursor is skipped unread."""


def _member_type_owner(c: ci.Cursor) -> tuple[str, tuple[str, ...]] | None:
    """For a member type declared in `c`: the class's name as a dependent type names it (`vec4` for the
    primary template, `vec4<float>` for an explicit specialization, unqualified) and the primary
    template's parameter names (() for a concrete class); None when `c` is no class."""
    if c.kind == K.CLASS_TEMPLATE:
        params = tuple(k.spelling for k in c.get_children()
                       if k.kind in (K.TEMPLATE_TYPE_PARAMETER, K.TEMPLATE_NON_TYPE_PARAMETER))
        return (c.spelling, params) if c.spelling else None
    if c.kind in (K.STRUCT_DECL, K.CLASS_DECL) and c.spelling:
        canon = c.type.get_canonical().spelling
        return (c.spelling + (canon[canon.index("<"):] if "<" in canon else ""), ())
    return None


def _method(low: _Lowering, c: ci.Cursor, lines: list[str], problems: list[ir.ParseProblem],
            parse_path: str, kids: list[ci.Cursor] | None = None,
            classes: dict[tuple[int, int | None], tuple[str, tuple[ir.TemplateParam, ...]]] | None = None,
            ) -> ir.Function:
    """A member function, conversion operator or constructor of a struct: named `Class::name`, with
    the class's template parameters first and a constructor's member initializers (`: x(v)`) as
    assignments to `this`'s fields before its body. `kids`: `c`'s children, when already listed;
    `classes`: the name and template parameters of each class already met in this translation unit,
    by declaration (a class's members are listed once, not once per method)."""
    kids = list(c.get_children()) if kids is None else kids
    fn = _function(low, c, lines, problems, parse_path, kids)
    record = c.semantic_parent
    key = (record._kind_id, record.data[0]) if record is not None else None  # (kind, clang's Decl*)
    known = classes.get(key) if classes is not None and key is not None else None
    if known is None:
        known = _class_of(record)
        if classes is not None and key is not None:
            classes[key] = known
    cls, ctparams = known
    body = fn.body
    if c.kind == K.CONSTRUCTOR and body is not None:
        inits: list[ir.Stmt] = []
        rtype = low.types.convert(record.type) if record is not None else ir.UNKNOWN_TYPE
        for i, k in enumerate(kids):
            if k.kind != K.MEMBER_REF or i + 1 >= len(kids) or not kids[i + 1].kind.is_expression():
                continue
            value = low.expr(kids[i + 1])
            f = rtype.field(k.spelling)
            target = ir.Member(ir.Ref("this", "local", rtype, fn.span), k.spelling, f.offset if f else -1, False,
                               f.ctype if f else ir.UNKNOWN_TYPE, fn.span)
            inits.append(ir.ExprStmt(ir.Binary("=", target, value, target.ctype, fn.span), fn.span))
        body = ir.Block(tuple(inits) + body.body, body.span)
    if body is not None and c.result_type.kind == ci.TypeKind.LVALUEREFERENCE:
        # `T& operator[](int i) { return s[i]; }`: the call is the element itself, so the method
        # returns its address and the call site dereferences it (see _Lowering.call).
        body = _address_returns(body)  # type: ignore[assignment]
    return dataclasses.replace(fn, name=f"{cls}::{c.spelling}" if cls else c.spelling, body=body,
                               template_params=ctparams + fn.template_params)


def _class_of(record: ci.Cursor | None) -> tuple[str, tuple[ir.TemplateParam, ...]]:
    """The name a method's class gives it (`Class::name`) and the class's template parameters."""
    cls = record.spelling if record is not None else ""
    if record is not None and record.kind in (K.STRUCT_DECL, K.CLASS_DECL) and "<" in record.type.spelling:
        cls = record.type.get_canonical().spelling  # an explicit specialization: `SharedMemory<float>`
    ctparams = tuple(ir.TemplateParam(k.spelling, k.kind == K.TEMPLATE_TYPE_PARAMETER)
                     for k in (record.get_children() if record is not None else ())
                     if k.kind in (K.TEMPLATE_TYPE_PARAMETER, K.TEMPLATE_NON_TYPE_PARAMETER))
    return cls, ctparams


def _address_returns(s: ir.Stmt) -> ir.Stmt:
    """`return e;` -> `return &e;` throughout a statement tree (for functions returning references)."""
    if isinstance(s, ir.Return) and s.value is not None:
        v = s.value
        t = ir.CType("pointer", 8, False, pointee=v.ctype, name=v.ctype.name + " *")
        return ir.Return(ir.Unary("&", v, t, v.span if hasattr(v, "span") else s.span), s.span)
    if isinstance(s, ir.Block):
        return ir.Block(tuple(_address_returns(b) for b in s.body), s.span, s.scope)
    if isinstance(s, ir.If):
        return ir.If(s.cond, _address_returns(s.then), _address_returns(s.other) if s.other else None, s.span)
    if isinstance(s, ir.For):
        return ir.For(s.init, s.cond, s.step, _address_returns(s.body), s.span)
    if isinstance(s, ir.While):
        return ir.While(s.cond, _address_returns(s.body), s.span, s.do_while)
    if isinstance(s, ir.Switch):
        return ir.Switch(s.cond, tuple((lab, tuple(_address_returns(b) for b in body)) for lab, body in s.cases),
                         s.span)
    return s
























