"""What of a CUDA source is device code, as text.

The code mask (comments and strings blanked), top-level chunks, the device-only extraction that drops
host code, macro uses, and the inlining of the file's own headers; `--confirm` instruments what this
keeps, and ptxas register counts compile it."""
from __future__ import annotations

import os
import re

from kernlint.base.frozen import frozen
from kernlint.ir.known_headers import declarations_for

# NVRTC has no implicit cuda_fp16.h / cuda_bf16.h (nvcc gets them through cuda_runtime.h).
HALF_TYPES = re.compile(r"\b(__half2?|half2?|__nv_bfloat162?|nv_bfloat162?|__float2half\w*|__half2float|"
                         r"__float2bfloat16\w*|__bfloat162float)\b")


PRELUDE_END = "// ---- end of instrumentation;"


# Headers NVRTC provides (with the CUDA include path CuPy passes); every other <...> include is
# host-only (stdio, cuda_runtime, iostream, vector, ...) and is blanked.
DEVICE_HEADERS = re.compile(
    r"^(cuda_fp16\.h|cuda_bf16\.h|cuda_fp8\.h|cuda_fp4\.h|cuda_fp6\.h|mma\.h|cooperative_groups\.h|"
    r"cooperative_groups/.*|cuda/.*|cub/.*|thrust/.*|math_constants\.h|sm_\d+_intrinsics\.h|"
    r"cuda_pipeline.*\.h|cuda_awbarrier.*\.h|crt/.*|vector_types\.h|vector_functions\.h)$")


_DEVICE_WORDS = re.compile(r"\b(__global__|__device__|__constant__|__managed__)\b")


_KEEP_DECL_WORDS = re.compile(
    r"\b(__global__|__device__|__constant__|__managed__|__shared__|typedef|using|struct|class|union|enum|template|"
    r"constexpr|const|static_assert|namespace)\b")


def _code_mask(text: str) -> list[bool]:
    """True for characters that are code (not inside comments, strings, or preprocessor lines)."""
    n = len(text)
    out = [True] * n
    i = 0
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if at_line_start and c in " \t":
            i += 1
            continue
        if at_line_start and c == "#":
            # A preprocessor line, with backslash continuations (comments inside it end nothing).
            j = i
            while j < n:
                if text[j] == "\n" and (j == 0 or text[j - 1] != "\\"):
                    break
                j += 1
            for k in range(i, j):
                out[k] = False
            i = j
            continue
        at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = False
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                out[k] = False
            i = j
            continue
        if c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\ ]{0,16})\(', text[i:])
            if m:
                end = text.find(")" + m.group(1) + '"', i)
                j = n if end < 0 else end + len(m.group(1)) + 2
                for k in range(i, j):
                    out[k] = False
                i = j
                continue
        if c in "\"'":
            # A char literal or a digit separator (1'000): treat ' after a digit as a separator.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(n, j + 1)
            for k in range(i, j):
                out[k] = False
            i = j
            continue
        i += 1
    return out


def _line_offsets(text: str) -> list[int]:
    offs = [0]
    for i, c in enumerate(text):
        if c == "\n":
            offs.append(i + 1)
    return offs


def offset_of(text: str, line_offsets: list[int], line: int, column: int) -> int | None:
    """Character offset of a 1-based (line, byte column) position, as libclang reports them."""
    if line < 1 or line > len(line_offsets) or column < 1:
        return None
    start = line_offsets[line - 1]
    end = line_offsets[line] - 1 if line < len(line_offsets) else len(text)
    line_text = text[start:end]
    raw = line_text.encode("utf-8")
    if column - 1 > len(raw):
        return None
    return start + len(raw[: column - 1].decode("utf-8", errors="ignore"))


@frozen
class _Chunk:
    start: int
    end: int  # exclusive
    header_end: int  # offset of the opening `{` of its body, or `end` when it has none
    braced: bool


def _top_level_chunks(text: str, mask: list[bool], start: int, end: int) -> list[_Chunk]:
    """Split [start, end) into top-level declarations: up to a `;` or a closing `}` at depth 0."""
    chunks: list[_Chunk] = []
    i = start
    chunk_start = start
    depth = 0
    paren = 0
    header_end = -1
    while i < end:
        c = text[i]
        if not mask[i]:
            if depth == 0 and paren == 0 and chunk_start == i and text[i] in "#/":
                # A comment or preprocessor line between declarations belongs to nobody.
                j = i
                while j < end and not mask[j]:
                    j += 1
                chunk_start = j
                i = j
                continue
            i += 1
            continue
        if c.isspace() and chunk_start == i and depth == 0:
            chunk_start = i + 1
            i += 1
            continue
        if c in "([":
            paren += 1
        elif c in ")]":
            paren = max(0, paren - 1)
        elif c == "{":
            if depth == 0 and paren == 0:
                header_end = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and paren == 0:
                # `struct S {...} s;` and `= {...};` continue to the `;`; a function body ends here.
                rest = i + 1
                while rest < end and (text[rest].isspace() or not mask[rest]):
                    rest += 1
                # (`template <class T>` before a function is not a class: drop the parameter list)
                header = re.sub(r"^\s*template\s*<(?:[^<>]|<[^<>]*>)*>", "", text[chunk_start:header_end])
                if re.search(r"\b(struct|class|union|enum)\b", header) or re.search(r"=\s*$", header):
                    i += 1
                    continue
                chunks.append(_Chunk(chunk_start, i + 1, header_end, True))
                chunk_start = i + 1
                header_end = -1
            elif depth < 0:
                depth = 0
        elif c == ";" and depth == 0 and paren == 0:
            he = header_end if header_end >= 0 else i + 1
            chunks.append(_Chunk(chunk_start, i + 1, he, header_end >= 0))
            chunk_start = i + 1
            header_end = -1
        i += 1
    if chunk_start < end and text[chunk_start:end].strip():
        chunks.append(_Chunk(chunk_start, end, end, False))
    return chunks


def _blank(chars: list[str], start: int, end: int) -> None:
    for k in range(start, end):
        if chars[k] != "\n":
            chars[k] = " "


_CONDITIONAL = re.compile(r"(?m)^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b[^\n]*")


def _blank_code(text: str, chars: list[str], start: int, end: int) -> None:
    """Blank [start, end) but keep conditional directives (`#if` ... `#endif`) in it.

    A removed declaration can span a directive whose partner lies outside it (a declaration that
    ends after an `#endif`, a macro invocation without a `;`): blanking the directive would leave
    the rest of the file unbalanced, and NVRTC would reject every kernel.
    """
    keep = [(m.start(), m.end()) for m in _CONDITIONAL.finditer(text, start, end)]
    pos = start
    for a, b in keep:
        _blank(chars, pos, a)
        pos = b
    _blank(chars, pos, end)


_FUNC_NAME = re.compile(r"(~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*(?:<[^()]*>)?\s*\($")


def _function_name(header: str) -> str | None:
    """The name a function definition's header declares (`Outer::name` gives `name`); None for operators."""
    head = re.sub(r"^\s*template\s*<(?:[^<>]|<(?:[^<>]|<[^<>]*>)*>)*>", "", header)
    head = re.sub(r"\[\[[^\]]*\]\]", " ", head)
    if re.search(r"\boperator\b", head):
        return None
    k = head.find("(")
    while k >= 0:
        m = _FUNC_NAME.search(head[:k + 1])
        if m and m.group(1).split("::")[-1].strip() not in ("__launch_bounds__", "__align__", "alignas",
                                                             "__attribute__", "__declspec", "decltype"):
            return m.group(1).split("::")[-1].strip().lstrip("~")
        k = head.find("(", k + 1)
    return None


_MACRO_DEF = re.compile(r"(?m)^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)((?:[^\n]*\\\r?\n)*[^\n]*)")


def macro_uses(text: str) -> dict[str, set[str]]:
    """Each macro the text defines -> the identifiers its body names (so a kernel that uses a macro
    keeps the functions the macro calls)."""
    out: dict[str, set[str]] = {}
    for m in _MACRO_DEF.finditer(text):
        out.setdefault(m.group(1), set()).update(_IDENT.findall(m.group(2)))
    return out


_IDENT = re.compile(r"[A-Za-z_]\w*")


_TEMPLATE_HEAD = re.compile(r"^\s*template\s*<(?:[^<>]|<(?:[^<>]|<[^<>]*>)*>)*>")


def _declared_names(code: str) -> set[str]:
    """Names a type or constant declaration introduces (struct S, typedef ... T;, using T =, int N = ...)."""
    code = _TEMPLATE_HEAD.sub("", code)  # `template <class T>`: T is no name of the file
    names = set(re.findall(r"\b(?:struct|class|union|enum(?:\s+class)?)\s+(?:(?:__align__|alignas|__attribute__|"
                           r"__declspec)\s*\((?:[^()]|\([^()]*\))*\)\s*|\[\[[^\]]*\]\]\s*)*([A-Za-z_]\w*)", code))
    names |= set(re.findall(r"\busing\s+([A-Za-z_]\w*)\s*=", code))
    m = re.search(r"\btypedef\b.*?([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*;\s*$", code, re.DOTALL)
    if m:
        names.add(m.group(1))
    # a function pointer typedef: `typedef float (*binary_t)(float, float);`
    names |= set(re.findall(r"\btypedef\b[^;]*?\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(", code))
    for m in re.finditer(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*(?:=|\{)", code.split("{")[0] if "struct" not in code else ""):
        names.add(m.group(1))
    return names


def device_only(text: str, keep_lines: frozenset[int] = frozenset(),
                used_elsewhere: frozenset[str] = frozenset(),
                include_dirs: tuple[str, ...] = (), roots: bool = True) -> tuple[str, list[tuple[int, int]]]:
    """Blank host code (same length, same newlines) so that only the device code the kernels need remains.

    The kernels are the roots: `__global__` definitions and the functions covering a line in
    `keep_lines` (the kernels and device functions the front end found, which also catches
    qualifiers hidden behind macros). Everything else -- device functions, `__device__`/`__constant__`
    variables, types, typedefs, constants, other functions -- stays only when code that stays names it
    (to a fixed point; a macro that kept code uses names what its body names), so a host function in a
    header (`template <class T> [[nodiscard]] cudaError_t f(...)`, an error-check helper using a removed
    cuBLAS handle) goes, while the `struct Particle` a kernel reads and the `__device__` helper it calls
    stay. For a header, `used_elsewhere` holds the names the including file's device code uses and
    there are no roots of its own. `#include <...>` of host headers is blanked; one that resolves under
    `include_dirs` (a project's `-I` directory) stays, to be inlined like a quoted one.
    """
    mask = _code_mask(text)
    chars = list(text)
    line_offsets = _line_offsets(text)
    removed: list[tuple[int, int]] = []

    def line_of(off: int) -> int:
        lo, hi = 0, len(line_offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_offsets[mid] <= off:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def code_of(start: int, end: int) -> str:
        return "".join(c if m else " " for c, m in zip(text[start:end], mask[start:end]))

    kept: list[_Chunk] = []
    candidates: list[tuple[_Chunk, set[str]]] = []  # kept only when kept code names one of the names
    dropped: list[_Chunk] = []

    def visit(start: int, end: int) -> None:
        for ch in _top_level_chunks(text, mask, start, end):
            header = code_of(ch.start, ch.header_end)
            first, last = line_of(ch.start), line_of(max(ch.start, ch.end - 1))
            covers_kept = any(first <= ln <= last for ln in keep_lines)
            if ch.braced and re.search(r"^\s*(inline\s+)?namespace\b[^=]*$", header) or \
                    ch.braced and re.match(r'^\s*extern\s+"C(\+\+)?"\s*$', text[ch.start:ch.header_end]):
                visit(ch.header_end + 1, ch.end - 1)
                continue
            if "<<<" in text[ch.start:ch.end]:
                dropped.append(ch)
            elif ch.braced and "(" in header and not re.search(r"\b(struct|class|union|enum)\b",
                                                               _TEMPLATE_HEAD.sub("", header).split("(")[0]):
                name = _function_name(header)
                if roots and (covers_kept or re.search(r"\b__global__\b", header)):
                    kept.append(ch)
                elif name is None:  # an operator: kept when it is device code
                    (kept if _DEVICE_WORDS.search(header) else dropped).append(ch)
                else:
                    candidates.append((ch, {name}))
            elif covers_kept or re.search(r"\b__shared__\b", header) or \
                    re.search(r"\b__global__\b", header) and "(" in header:
                kept.append(ch)
            elif _DEVICE_WORDS.search(header) or _KEEP_DECL_WORDS.search(header):
                body = code_of(ch.start, ch.end)
                names = _declared_names(body)
                if "(" in body and not names and not re.search(r"\b(struct|class|union|enum|typedef|using)\b", body):
                    fname = _function_name(body[:body.index("(") + 1])
                    names = {fname} if fname else set()
                if not names and "(" not in body:  # `__constant__ float c[N];`, `extern int n;`
                    m = re.search(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*;\s*$", body)
                    names = {m.group(1)} if m else set()
                if not names and re.search(r"\b(static_assert|enum)\b", body):
                    kept.append(ch)  # a static_assert or an anonymous enum (whose names cannot be told)
                else:
                    candidates.append((ch, names))
            else:
                dropped.append(ch)

    visit(0, len(text))
    macros = macro_uses(text)
    used: set[str] = set(used_elsewhere)  # names the including file's device code uses (for headers)

    def add_used(names: set[str]) -> None:
        stack = [n for n in names if n not in used]
        while stack:
            n = stack.pop()
            if n in used:
                continue
            used.add(n)
            stack.extend(m for m in macros.get(n, ()) if m not in used)

    for n in list(used):
        add_used(set(macros.get(n, ())))
    for ch in kept:
        add_used(set(_IDENT.findall(code_of(ch.start, ch.end))))
    changed = True
    while changed:
        changed = False
        for item in list(candidates):
            ch, names = item
            if names & used:
                candidates.remove(item)
                kept.append(ch)
                add_used(set(_IDENT.findall(code_of(ch.start, ch.end))))
                changed = True
    for ch in dropped + [c for c, _n in candidates]:
        _blank_code(text, chars, ch.start, ch.end)
        removed.append((line_of(ch.start), line_of(max(ch.start, ch.end - 1))))
    removed.sort()
    # Host-only includes: NVRTC has no host headers.
    for m in re.finditer(r"(?m)^[ \t]*#[ \t]*include[ \t]*<([^>]+)>.*$", text):
        name = m.group(1).strip()
        if not DEVICE_HEADERS.match(name) and not any(os.path.isfile(os.path.join(d, name)) for d in include_dirs):
            _blank(chars, m.start(), m.end())
    return "".join(chars), removed


def _escape(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', '\\"')


_USER_INCLUDE = re.compile(r'(?m)^[ \t]*#[ \t]*include[ \t]*(?:"([^"]+)"|<([^>]+)>)[^\n]*$')


_LINE_DIRECTIVE = re.compile(r'(?m)^#line (\d+)[^\n]*\n')


def _logical_line(code: str, pos: int) -> int:
    """The line number the compiler gives offset `pos`, honouring the last `#line` before it."""
    last = None
    for m in _LINE_DIRECTIVE.finditer(code, 0, pos):
        last = m
    if last is None:
        return code.count("\n", 0, pos) + 1
    return int(last.group(1)) + code.count("\n", last.end(), pos)


def device_names(code: str) -> set[str]:
    """Identifiers the code (not comments, strings or directives) names, and what the macros it uses name."""
    mask = _code_mask(code)
    used = set(_IDENT.findall("".join(c if k else " " for c, k in zip(code, mask))))
    macros = macro_uses(code)
    stack = [n for n in used if n in macros]
    while stack:
        for m in macros.get(stack.pop(), ()):
            if m not in used:
                used.add(m)
                stack.append(m)
    return used


def inline_user_headers(code: str, base_dir: str, include_dirs: tuple[str, ...], filename: str) -> str:
    """Replace each `#include "x.h"` (or `<x.h>` found under `include_dirs`) by the header's device-only text.

    Project headers often mix device helpers with host code (`cublas_v2.h`, error-check
    functions); NVRTC cannot compile the host half, so each header goes through `device_only`
    too, keeping only what the device code names (the including file's and, to a fixed point, what
    the kept parts of every header name: a type one header keeps may come from another). `#line`
    directives keep compiler messages and `-lineinfo` pointing at the right file and line. A header
    is inlined once (include guards and `#pragma once` then have nothing left to guard); an include
    that does not resolve stays as written, and NVRTC reports it.
    """
    # The instrumentation prelude's own names (`count`, `mask`, `site` ...) are not the user's.
    user = code.split(PRELUDE_END, 1)[-1]
    used = frozenset(device_names(user))
    out = code
    for _ in range(8):
        out = _inline(code, base_dir, include_dirs, filename, used, set(), 0)
        grown = used | device_names(out.split(PRELUDE_END, 1)[-1])
        if grown == used:
            break
        used = frozenset(grown)
    return out


def _inline(code: str, base_dir: str, include_dirs: tuple[str, ...], filename: str, used: frozenset[str],
            seen: set[str], _depth: int) -> str:
    out: list[str] = []
    pos = 0
    for m in _USER_INCLUDE.finditer(code):
        name = (m.group(1) or m.group(2)).strip()
        angled = m.group(1) is None  # `<x.h>` searches only the -I directories
        path = next((os.path.join(d, name) for d in ((*include_dirs,) if angled else (base_dir, *include_dirs))
                     if os.path.isfile(os.path.join(d, name))), None)
        if angled and path is None:
            continue  # a CUDA header device_only kept (cuda_fp16.h, cooperative_groups.h)
        if path is None and not DEVICE_HEADERS.match(name):
            # Not the project's: a host or CUDA runtime header (`#include "cuda.h"`), which NVRTC
            # would find in the toolkit and then fail on its host includes.
            out.append(code[pos:m.start()] + f"// (host header left out: {name})")
            pos = m.end()
            continue
        if path is None or _depth > 8:
            continue
        line_no = _logical_line(code, m.start())
        out.append(code[pos:m.start()])
        real = os.path.realpath(path)
        if real in seen:
            out.append(f"// (already inlined: {name})")
        else:
            seen.add(real)
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    header = fh.read()
            except OSError:
                out.append(m.group(0))
                pos = m.end()
                continue
            filtered, _ = device_only(header, used_elsewhere=used, include_dirs=include_dirs, roots=False)
            filtered = _inline(filtered, os.path.dirname(path), include_dirs, real, used, seen, _depth + 1)
            out.append(f'#line 1 "{_escape(real)}"\n{filtered}\n#line {line_no + 1} "{_escape(filename)}"')
        pos = m.end()
    out.append(code[pos:])
    return "".join(out)


# What nvcc's implicit host headers (math.h, float.h, sys/types.h, cstddef) give device code and
# NVRTC does not: defined only when missing.
_COMPAT_MACROS = """#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#endif
#ifndef FLT_MIN
#define FLT_MIN 1.175494351e-38F
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 1.192092896e-07F
#endif
#ifndef DBL_MAX
#define DBL_MAX 1.7976931348623158e+308
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
"""


def with_half_headers(code: str, filename: str) -> str:
    """Prepend what NVRTC lacks and nvcc gets from host headers (see `_COMPAT_MACROS`).

    cuda_fp16.h/cuda_bf16.h when their types are used, `uint`-style typedefs, `std::size_t`, and
    the float limits; a `#line` directive after them keeps the user's line numbers.
    """
    extra = ""
    if HALF_TYPES.search(code) and not re.search(r"#\s*include\s*<cuda_bf16\.h>", code):
        extra += "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
    for name, real in (("uint", "unsigned int"), ("ushort", "unsigned short"), ("ulong", "unsigned long")):
        if re.search(rf"\b{name}\b", code) and not re.search(rf"\btypedef\b[^;]*\b{name}\s*;", code):
            extra += f"typedef {real} {name};\n"
    if "std::size_t" in code or "std::ptrdiff_t" in code:
        extra += "namespace std { using size_t = decltype(sizeof(0)); using ptrdiff_t = decltype((int*)0 - (int*)0); }\n"
    if "std::bool_constant" in code or "std::integral_constant" in code:
        # (NVRTC has no <type_traits>; llm.c passes std::bool_constant<...> as a tag argument)
        extra += ("namespace std { template <class T, T v> struct integral_constant { static constexpr T value = v; "
                  "constexpr operator T() const { return v; } }; template <bool B> using bool_constant = "
                  "integral_constant<bool, B>; }\n")
    extra += declarations_for(code)  # library types of headers NVRTC lacks (cufftComplex, XMFLOAT3)
    extra += _COMPAT_MACROS
    return extra + f'#line 1 "{_escape(filename)}"\n' + code
