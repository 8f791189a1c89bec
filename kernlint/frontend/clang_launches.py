"""Launches in host code, as clang sees them: each kernel launch's grid, block, template and pointer arguments, folded to values where the host code fixes them."""
from __future__ import annotations

import bisect
import re
from typing import Callable

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir import nodes as ir
from kernlint.frontend.clang_base import (
    _BINOPS,
    _INT_KINDS,
    _UNOPS,
    _PREFETCHED,
    K,
    MainText,
    Prefetched,
    _evaluate,
    _lib,
    _span,
    ci,
    spelled_line,
    spellings,
    template_int_value,
)
from kernlint.frontend.callees import _listed, _reassigned_names, stack_order
from kernlint.frontend.lowering import _function_key, _is_callee_ref
from kernlint.frontend.template_args import _split_template_args, _template_args_from_tokens
from kernlint.frontend.pointer_offsets import _assignments_of, arg_offsets


def _launches(c: ci.Cursor, source: bytes | None = None, main: MainText | None = None) -> list[ir.Launch]:
    """Find `k<<<g, b, s>>>(...)` calls in a host function and fold their configuration to numbers.

    `source`: the text of the file that holds `c`, when known: then the host function is tokenized for a
    launch's pointer offsets only where that text may assign an argument (see `_may_assign`). `main`: that
    file as the parse read it, when known: its tokens are then spelled without libclang (MainText)."""
    with Prefetched(c):  # (the walks below list every cursor of the function)
        return _launches_in(c, source, main)


def _launches_in(c: ci.Cursor, source: bytes | None, main: MainText | None) -> list[ir.Launch]:
    out: list[ir.Launch] = []
    local_inits: dict[str, ci.Cursor | None] = {}
    local_types: dict[str, str] = {}  # `using KT = Traits<N>;` in the host code: "KT" -> "Traits < N >"
    children = _children_once()  # the three walks of the function below share its tree
    nodes = list(stack_order(c, children))  # (the two walks in this order share it)
    reassigned = _reassigned_names(c, children, nodes)
    # `dim3 b; b.x = 256;`: a member assigned exactly once overrides the declared value (key
    # "b.x"); one assigned more than once, or by `+=`/`>>=`, is unknown (None).
    local_inits.update(_member_assignments(c, children, nodes))

    ancestors: list[ci.Cursor] = []  # enclosing for/if statements of the host code (host_samples.py)
    # The host function's tokens joined by spaces, read once: `whole`, each token's offset in the file and
    # where its text ends in `whole`. The text before a launch is a prefix of `whole`, so an assignment
    # found in `whole` is one a search of that prefix finds exactly when it ends inside it (its pattern
    # ends at the first `;` after the `=`): each name's assignments are searched once per function, not
    # once per launch in the text before it (quadratic in the launches of one function: issue 30).
    tokens: tuple[str, list[int], list[int]] | None = None
    assigns: dict[str, tuple[list[int], list[str]]] = {}

    def offsets(launch: ci.Cursor, arg_cursors: list[ci.Cursor], kinds: list[ci.TypeKind]) -> tuple[str, ...]:
        """Pointer offsets the arguments pass (frontend/pointer_offsets.py), from the text before the launch.
        `kinds`: the kind of each argument's canonical type."""
        nonlocal tokens
        if ci.TypeKind.POINTER not in kinds:
            return ()
        texts = [" ".join(spellings(a, main)) if kind == ci.TypeKind.POINTER else ""
                 for a, kind in zip(arg_cursors, kinds)]
        if source is not None and not _may_assign(texts, source):
            return arg_offsets(texts, "")  # no argument is assigned in the file: no text to search
        if tokens is None:
            spelled = main.tokens(c, offsets=True) if main is not None else None
            if spelled is None:
                spelled = [(t.extent.start.offset, t.spelling) for t in c.get_tokens()]
            ends, pos = [], -1
            for _off, s in spelled:
                pos += 1 + len(s)
                ends.append(pos)
            tokens = (" ".join(s for _o, s in spelled), [off for off, _s in spelled], ends)
        whole, offs, ends = tokens
        k = bisect.bisect_left(offs, launch.extent.start.offset)  # tokens before the launch
        cut = ends[k - 1] if k else 0  # len(" ".join(those tokens))

        def values(name: str) -> list[str]:
            if name not in assigns:
                found = [(m.end(), m.group(1)) for m in _assignments_of(name).finditer(whole)]
                assigns[name] = ([e for e, _v in found], [v for _e, v in found])
            found_ends, found_values = assigns[name]
            return found_values[:bisect.bisect_right(found_ends, cut)]

        return arg_offsets(texts, "", values=values)

    def emit(ch: ci.Cursor, callee: ci.Cursor, cargs: list, arg_kids: list[ci.Cursor]) -> None:
        """One launch: `callee` names the kernel, `cargs` are the grid, block and shared-memory bytes as
        written (cursors; None where the launch gives none), `arg_kids` the kernel's arguments."""
        api = ch.spelling.startswith("cudaLaunch")  # a runtime API call, not `<<<>>>`
        cargs = cargs + [None] * (3 - len(cargs))
        grid = _fold_dim3(cargs[0], local_inits) if cargs[0] is not None else None
        block = _fold_dim3(cargs[1], local_inits) if cargs[1] is not None else None
        shmem = _fold_int(cargs[2], local_inits) if cargs[2] is not None else None
        targs: tuple[str, ...] = ()
        ref = callee
        while ref.kind == K.UNEXPOSED_EXPR:
            sub = [k for k in children(ref) if k.kind.is_expression()]
            if not sub:
                break
            ref = sub[0]
        if ref.kind == K.DECL_REF_EXPR:
            targs = _template_args_from_tokens(ref, main)
        block_text = " ".join(spellings(cargs[1], main)) if cargs[1] is not None else ""
        name = ref.spelling or ("" if api else ch.spelling)
        if not name and api:
            return
        if not name:
            # A launch inside a host template has a dependent callee with no name.
            toks = spellings(ch, main)
            name = toks[0] if toks and toks[0].isidentifier() else ""
            if len(toks) > 2 and toks[1] == "<":
                targs = _split_template_args(toks[2:])
        decl = ref.referenced if ref.kind == K.DECL_REF_EXPR else None
        if decl is not None and decl.kind == K.VAR_DECL:
            # `auto kernel = &k<Traits>; kernel<<<g, b>>>(...)`: the kernel the variable holds.
            held = _held_kernel(decl, main)
            if held is not None:
                name, targs = held
                decl = None
        resolved: tuple[int, ...] = ()
        if decl is not None:
            before = targs
            targs = _alias_types_resolved(decl, targs, local_types)
            resolved = tuple(i for i, (a, b) in enumerate(zip(before, targs)) if a != b)
        targs = _aliased_template_args(targs, local_types, local_inits)
        targs = _fold_template_args(targs, local_inits)
        if decl is not None:
            targs = _resolved_template_args(decl, targs)
        deduced = _deduced_template_args(decl, targs) if decl is not None else ()
        key = _function_key(decl.get_definition() or decl) if decl is not None else ""
        kinds = [a.type.get_canonical().kind for a in arg_kids]  # (read once for the questions below)
        args = tuple(_fold_int(a, local_inits) if kind in _INT_KINDS else None for a, kind in zip(arg_kids, kinds))
        dims = partial_dim3(cargs[1], local_inits) if block is None and cargs[1] is not None else None
        span = _span(ch)
        out.append(ir.Launch(name, deduced or targs, grid, block, shmem, span, block_text, args, key,
                             block_dims=dims or (), dim_values=_parameter_values(c, dims or (), source),
                             arg_samples=_host_samples(ch, ancestors, arg_kids, args, local_inits, kinds),
                             deduced=len(deduced) > len(targs), arg_offsets=offsets(ch, arg_kids, kinds),
                             spelled_line=spelled_line(ch, span), resolved_args=resolved))

    def walk(n: ci.Cursor, depth: int) -> None:
        if depth > 200:
            return
        for ch in children(n):
            kind = ch.kind
            if kind == K.VAR_DECL and ch.spelling not in reassigned:
                # Only variables never assigned after their declaration fold to their initializer
                # (`for (int s = 1; ...; s++) k<<<...>>>(s)` must not bind s = 1).
                inits = [k for k in children(ch) if k.kind.is_expression()]
                if inits:
                    local_inits[ch.spelling] = inits[-1]
            if kind in (K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL) and ch.spelling:
                spelled = _alias_spelling(ch, main)
                if spelled:
                    local_types[ch.spelling] = spelled
            if kind == K.CALL_EXPR:
                kids = [k for k in children(ch) if k.kind.is_expression()]
                config = kids[1] if len(kids) > 1 else None
                if config is not None and config.kind == K.CALL_EXPR and config.spelling in (
                        "cudaConfigureCall", "__cudaPushCallConfiguration"):
                    cargs = [k for k in children(config) if k.kind.is_expression()][1:]
                    emit(ch, kids[0], cargs[:3], kids[2:])
                elif ch.spelling in ("cudaLaunchKernel", "cudaLaunchCooperativeKernel") and len(kids) >= 4:
                    # `cudaLaunchKernel((void*)k, grid, block, args, smem, stream)`: the arguments travel in
                    # an array of pointers, so their values are not read.
                    func = _kernel_ref(kids[1], children)
                    if func is not None:
                        emit(ch, func, [kids[2], kids[3]] + kids[5:6], [])
                elif ch.spelling == "cudaLaunchKernelEx" and len(kids) >= 3:
                    # `cudaLaunchKernelEx(&cfg, k, args...)`: the shape is the config's (its initializer,
                    # then `cfg.gridDim = ...` / `cfg.blockDim = ...` assigned once).
                    func = _kernel_ref(kids[2], children)
                    if func is not None:
                        emit(ch, func, _config_fields(kids[1], local_inits, children), kids[3:])
            scoped = kind in (K.FOR_STMT, K.IF_STMT)
            if scoped:
                ancestors.append(ch)
            walk(ch, depth + 1)
            if scoped:
                ancestors.pop()

    walk(c, 0)
    return out


def _parameter_values(fn: ci.Cursor, dims: tuple[str, ...], source: bytes | None) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """For each runtime block component of a launch in host function `fn` that is one of `fn`'s parameters
    (`k<<<g, threads>>>` in `static void launch(..., int threads)`), the values the calls of `fn` pass it,
    when `fn` can only be called from this file (`static`, an anonymous namespace) and every call there
    passes a constant; nothing for the others."""
    if not dims:
        return ()
    params = [a.spelling for a in fn.get_arguments()]
    wanted = {d: params.index(d) for d in dims if d in params}
    if not wanted or not fn.spelling or fn.linkage != ci.LinkageKind.INTERNAL:
        return ()  # (a function other files can call may be given other values there)
    usr = fn.get_usr()
    here = fn.location.file.name if fn.location.file is not None else None
    calls: list[list[ci.Cursor]] = []
    stack = list(fn.translation_unit.cursor.get_children())
    while stack:
        top = stack.pop()
        if top.location.file is None or top.location.file.name != here:
            continue
        if top.kind == K.NAMESPACE:
            stack.extend(top.get_children())
            continue
        if top.kind not in (K.FUNCTION_DECL, K.CXX_METHOD, K.FUNCTION_TEMPLATE) or not top.is_definition():
            continue
        if source is not None and fn.spelling.encode() not in source[top.extent.start.offset:top.extent.end.offset]:
            continue
        for n in top.walk_preorder():
            if n.kind == K.CALL_EXPR and n.spelling == fn.spelling and n.referenced is not None \
                    and n.referenced.get_usr() == usr:
                calls.append(list(n.get_arguments()))
    if not calls:
        return ()
    out = []
    for name, i in wanted.items():
        values = [_fold_int(args[i], {}) if i < len(args) else None for args in calls]
        if values and all(v is not None for v in values):
            out.append((name, tuple(dict.fromkeys(int(v) for v in values if v is not None))))
    return tuple(out)


_CASTS = (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CSTYLE_CAST_EXPR, K.CXX_REINTERPRET_CAST_EXPR, K.CXX_STATIC_CAST_EXPR)


def _kernel_ref(c: ci.Cursor, children: Callable[[ci.Cursor], list[ci.Cursor]]) -> ci.Cursor | None:
    """The name of the kernel a runtime-API launch is given (`(void*)k`, `&k<T>`, `reinterpret_cast<void*>(k)`,
    a variable holding one), else None."""
    n: ci.Cursor | None = c
    for _ in range(8):
        if n is None or n.kind == K.DECL_REF_EXPR:
            break
        if n.kind not in _CASTS and n.kind != K.UNARY_OPERATOR:
            return None
        if n.kind == K.UNARY_OPERATOR and _UNOPS.get(_lib().clang_getCursorUnaryOperatorKind(n)) != "&":  # type: ignore[attr-defined]
            return None
        sub = [k for k in children(n) if k.kind.is_expression()]
        n = sub[-1] if sub else None
    if n is None or n.kind != K.DECL_REF_EXPR or not n.spelling:
        return None
    ref = n.referenced
    if ref is not None and ref.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.VAR_DECL):
        return None
    return n


def _config_fields(c: ci.Cursor, inits: dict[str, ci.Cursor | None],
                   children: Callable[[ci.Cursor], list[ci.Cursor]]) -> list[ci.Cursor | None]:
    """The grid, block and dynamic shared-memory bytes of `cudaLaunchKernelEx`'s config argument (`&cfg`):
    the local's aggregate initializer `{grid, block, smem, ...}` (cudaLaunchConfig_t's member order), each
    overridden by a whole member assigned once in the function (`cfg.blockDim = dim3(16, 16);`); None
    where neither says."""
    n: ci.Cursor | None = c
    while n is not None and n.kind != K.DECL_REF_EXPR and (n.kind in _CASTS or n.kind == K.UNARY_OPERATOR):
        sub = [k for k in children(n) if k.kind.is_expression()]
        n = sub[-1] if len(sub) == 1 else None
    if n is None or n.kind != K.DECL_REF_EXPR:
        return [None, None, None]
    name = n.spelling
    fields: list[ci.Cursor | None] = [None, None, None]
    # (the declaration's initializer itself: `&cfg` given to the launch makes `cfg` a name the function
    # may reassign for `inits`, but a whole new value would be an assignment `cfg = ...`, "cfg=0")
    decl = n.referenced
    init = None
    if decl is not None and decl.kind == K.VAR_DECL and f"{name}=0" not in inits:
        found = [k for k in children(decl) if k.kind.is_expression()]
        init = found[-1] if found else None
    while init is not None and init.kind in _CASTS:
        sub = [k for k in children(init) if k.kind.is_expression()]
        init = sub[0] if len(sub) == 1 else None
    if init is not None and init.kind == K.INIT_LIST_EXPR:
        items = [k for k in children(init) if k.kind.is_expression()]
        for i in range(min(3, len(items))):
            fields[i] = items[i]
    for i, member in enumerate(("gridDim", "blockDim", "dynamicSmemBytes")):
        key = f"{name}.{member}"
        if f"{key}=0" in inits:
            fields[i] = inits[f"{key}=0"] if f"{key}=1" not in inits else None
    return fields


def _children_once() -> Callable[[ci.Cursor], list[ci.Cursor]]:
    """A cursor's children (a list the caller only reads), visited once per cursor object however often
    they are asked for: `_launches` walks a host function three times (its launches, the names it
    reassigns, the dim3 members it sets), which visited each node three times. Each cursor asked about is
    kept with its children, so its `id` stays its own while the function lives."""
    known: dict[int, tuple[ci.Cursor, list[ci.Cursor]]] = {}
    prefetched = _PREFETCHED

    def children(c: ci.Cursor) -> list[ci.Cursor]:
        hit = prefetched.get(id(c))  # (a subtree read whole: its list, which is read only too)
        if hit is None or hit[0] is not c:
            hit = known.get(id(c))
            if hit is None:
                hit = known[id(c)] = (c, list(c.get_children()))
        return hit[1]

    return children


_SPLICE_RE = lazy_compile(rb"\\\r?\n|\\\r")  # a backslash-newline: clang joins the lines, inside a name too
# A name followed by `=` (not `==`: one token), or by a comment or a backslash that could hide what follows.
_MAY_ASSIGN_RE = lazy_compile(rb"(?<![\w$])([A-Za-z_$][\w$]*)\s*(?:=(?!=)|/|\\)")
_assigned_memo: list[tuple[bytes, frozenset[str] | None]] = []  # the last file's text and its names


def _may_assign(arg_texts: list[str], text: bytes) -> bool:
    """Whether `text` (the file holding a launch) may hold an assignment `name = ...` of a name spelled in the
    launch's arguments, as the tokens before the launch joined by spaces would show it to arg_offsets (which
    looks an argument that is a plain name up in them: `name =`, not `==`). A superset: every name followed by
    `=`, or by a comment or a backslash, counts, and a line splice or a name outside ASCII answers True. When
    this is False, arg_offsets finds nothing in those tokens, so it needs none (tokenizing a host function
    costs five ctypes calls per token)."""
    names = {n for t in arg_texts for n in re.findall(r"[A-Za-z_]\w*", t)}
    if not names:
        return False
    if not all(n.isascii() for n in names):
        return True
    if not _assigned_memo or _assigned_memo[0][0] is not text:
        found = None if _SPLICE_RE.search(text) else frozenset(
            m.decode("ascii") for m in _MAY_ASSIGN_RE.findall(text))
        _assigned_memo[:] = [(text, found)]
    assigned = _assigned_memo[0][1]
    return assigned is None or not names.isdisjoint(assigned)


def _held_kernel(var: ci.Cursor, main: MainText | None = None) -> tuple[str, tuple[str, ...]] | None:
    """(name, template arguments as written) of the function a variable is initialized with (`auto k =
    &kernel<Traits>;`, `= kernel<T>`, `= &kernel`), from its tokens; None for anything else."""
    toks = spellings(var, main)
    if "=" not in toks:
        return None
    rest = toks[toks.index("=") + 1:]
    if rest[:1] == ["&"]:
        rest = rest[1:]
    while len(rest) > 2 and rest[1] == "::":
        rest = rest[2:]
    if not rest or not rest[0].isidentifier():
        return None
    if len(rest) == 1 or rest[1] in (";", ")"):
        return rest[0], ()
    if rest[1] == "<":
        return rest[0], _split_template_args(rest[2:])
    return None


def _alias_spelling(decl: ci.Cursor, main: MainText | None = None) -> str:
    """The type a local `using A = T;` or `typedef T A;` names, as written ("" when not plain)."""
    toks = spellings(decl, main)
    if decl.kind == K.TYPE_ALIAS_DECL:
        rest = toks[toks.index("=") + 1:] if "=" in toks else []
    else:
        rest = toks[1:toks.index(decl.spelling)] if toks[:1] == ["typedef"] and decl.spelling in toks else []
    if rest[-1:] == [";"]:
        rest = rest[:-1]
    if rest[:1] == ["typename"]:
        rest = rest[1:]
    return " ".join(rest) if rest and ";" not in rest and "{" not in rest else ""


_NAME_RE = lazy_compile(r"[A-Za-z_]\w*")


def _aliased_template_args(targs: tuple[str, ...], types: dict[str, str],
                           inits: dict[str, ci.Cursor | None]) -> tuple[str, ...]:
    """Template arguments that name a local type alias (`using KT = Traits<kN, 4>; k<KT><<<...>>>`) as the
    type it names, each host constant inside it (a local `constexpr int kN = 1;`, a `constexpr bool`)
    written as its value; the alias's other names stay (a host template's parameters, bound later by
    the project's host context)."""
    out = []
    for a in targs:
        spelled, depth = a.strip(), 0
        while spelled in types and depth < 8:
            spelled, depth = types[spelled], depth + 1
        if depth == 0:
            out.append(a)
            continue

        def value(m: re.Match[str]) -> str:
            init = inits.get(m.group(0))
            v = _fold_int(init, inits) if init is not None else None
            if v is not None and init is not None and init.type.get_canonical().kind == ci.TypeKind.BOOL:
                return "true" if v else "false"
            return str(v) if v is not None else m.group(0)

        out.append(_NAME_RE.sub(value, spelled))
    return tuple(out)


def _alias_types_resolved(decl: ci.Cursor, written: tuple[str, ...], types: dict[str, str]) -> tuple[str, ...]:
    """The written template arguments of a launch, each type argument that names a local type alias
    (`scalar_t`, `Traits<scalar_t>`; the alias `using scalar_t = c10::impl::ScalarTypeToCPPTypeT<enum_type>;`
    is written by a dispatch macro once per listed type: its tokens are the macro's, the same in every
    case) as the type clang bound it to in this specialization ("float", "Traits<c10::Half>"), when that
    type is concrete; others as written."""
    def names_alias(a: str) -> bool:
        return any(w in types for w in _NAME_RE.findall(a))

    if not any(names_alias(a) for a in written):
        return written
    try:
        n = decl.get_num_template_arguments()
    except Exception:  # noqa: BLE001 - older libclang bindings: as written
        return written
    out = list(written)
    for i in range(min(n, len(written))):
        if not names_alias(written[i]) or decl.get_template_argument_kind(i) != ci.TemplateArgumentKind.TYPE:
            continue
        t = decl.get_template_argument_type(i).get_canonical()
        spelled = t.spelling
        if t.kind in (ci.TypeKind.INVALID, ci.TypeKind.UNEXPOSED) or not spelled or "type-parameter" in spelled:
            continue  # dependent (a host template's parameter) or not resolved: the alias as written
        out[i] = spelled.replace("struct ", "").replace("class ", "")
    return tuple(out)


def _resolved_template_args(decl: ci.Cursor, written: tuple[str, ...]) -> tuple[str, ...]:
    """The written template arguments of a launch, each integral one as the value clang gave the kernel
    specialization it calls (`k<Traits::kN, TILE>` with `enum { TILE = 16 }`: ("128", "16")): clang's view
    of constants (typedefs, constexpr, enumerators, static members, macros). Type arguments stay as
    written; anything clang does not resolve too."""
    try:
        n = decl.get_num_template_arguments()
    except Exception:  # noqa: BLE001 - older libclang bindings: as written
        return written
    if n < len(written) or n <= 0:
        return written
    out = list(written)
    for i in range(len(written)):
        if decl.get_template_argument_kind(i) == ci.TemplateArgumentKind.INTEGRAL:
            out[i] = str(template_int_value(decl, i))
    return tuple(out)


def _deduced_template_args(decl: ci.Cursor, explicit: tuple[str, ...]) -> tuple[str, ...]:
    """All template arguments of the kernel specialization a launch calls, when clang deduced some
    from the argument types (`scale<<<g, b>>>(out, inp)` with `template <class T> scale(T*, const T*)`
    and `floatX* out`): the explicit ones as written, the deduced ones as clang resolved them (the
    canonical type, or the integer value). () when nothing was deduced or an argument is not a type
    or an integer."""
    try:
        n = decl.get_num_template_arguments()
    except Exception:  # noqa: BLE001 - older libclang bindings: no deduction
        return ()
    if n <= len(explicit):
        return ()
    out = list(explicit)
    for i in range(len(explicit), n):
        kind = decl.get_template_argument_kind(i)
        if kind == ci.TemplateArgumentKind.TYPE:
            spelling = decl.get_template_argument_type(i).get_canonical().spelling
            out.append(spelling.replace("struct ", "").replace("class ", ""))
        elif kind == ci.TemplateArgumentKind.INTEGRAL:
            out.append(str(template_int_value(decl, i)))
        else:
            return ()
    return tuple(out)


def _fold_template_args(targs: tuple[str, ...], local_inits: dict[str, ci.Cursor | None]) -> tuple[str, ...]:
    """Template arguments that name a host constant (`const int N = 128; k<N><<<1, N>>>()`) as its value."""
    out = []
    for a in targs:
        init = local_inits.get(a.strip()) if a.strip().isidentifier() else None
        v = _fold_int(init, local_inits) if init is not None else None
        out.append(str(v) if v is not None else a)
    return tuple(out)


def _member_assignments(fn: ci.Cursor, children: Callable[[ci.Cursor], list[ci.Cursor]] | None = None,
                        nodes: list[tuple[ci.Cursor, ci.CursorKind, list[ci.Cursor]]] | None = None,
                        ) -> dict[str, ci.Cursor | None]:
    """`v.x = expr` in a host function, keyed "v.x": the assigned value, or None when `v.x` is
    assigned more than once or by a compound assignment (its value at a launch is then unknown).
    `children`: a cursor's children (see _children_once), read only; `nodes`: `stack_order(fn, children)`,
    when already listed."""
    kids_of = children or _listed
    out: dict[str, ci.Cursor | None] = {}
    wholes: dict[str, list[ci.Cursor]] = {}
    for n, kind, kids in stack_order(fn, kids_of) if nodes is None else nodes:
        if kind == K.CALL_EXPR and n.spelling == "operator=":
            # `threads = dim3(512, 1);` on a class type is an operator= call: "threads=" lists the
            # values assigned (the variable's value at a launch when they all fold to the same).
            ops = [k for k in kids if k.kind.is_expression() and not _is_callee_ref(k, "operator=")]
            t = ops[0] if len(ops) == 2 else None
            while t is not None and t.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
                sub = [k for k in kids_of(t) if k.kind.is_expression()]
                t = sub[0] if len(sub) == 1 else None
            if t is not None and t.kind == K.DECL_REF_EXPR:
                wholes.setdefault(t.spelling, []).append(ops[1])
            elif t is not None and t.kind == K.MEMBER_REF_EXPR and t.spelling in ("gridDim", "blockDim"):
                # `cfg.blockDim = dim3(16, 16);` of a launch config (cudaLaunchKernelEx): keyed "cfg.blockDim"
                b = _member_owner(t, kids_of)
                if b is not None:
                    wholes.setdefault(f"{b.spelling}.{t.spelling}", []).append(ops[1])
            continue
        if kind not in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR) or len(kids) != 2:
            continue
        op = _BINOPS.get(_lib().clang_getCursorBinaryOperatorKind(n))  # type: ignore[attr-defined]
        if not op or not op.endswith("=") or op in ("==", "!=", "<=", ">="):
            continue
        lhs = kids[0]
        if lhs.kind == K.MEMBER_REF_EXPR and lhs.spelling == "dynamicSmemBytes" and op == "=":
            b = _member_owner(lhs, kids_of)
            if b is not None:
                wholes.setdefault(f"{b.spelling}.dynamicSmemBytes", []).append(kids[1])
            continue
        if lhs.kind != K.MEMBER_REF_EXPR or lhs.spelling not in ("x", "y", "z"):
            continue
        b = _member_owner(lhs, kids_of)
        if b is None:
            continue
        key = f"{b.spelling}.{lhs.spelling}"
        out[key] = kids[1] if op == "=" and key not in out else None
    for name, values in wholes.items():
        for i, v in enumerate(values):
            out[f"{name}={i}"] = v
    return out


def _member_owner(member: ci.Cursor, kids_of: Callable[[ci.Cursor], list[ci.Cursor]]) -> ci.Cursor | None:
    """The variable a member expression is of (`cfg` of `cfg.blockDim`, `b` of `b.x`), else None."""
    base = [k for k in kids_of(member) if k.kind.is_expression()]
    b = base[0] if base else None
    while b is not None and b.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
        sub = [k for k in kids_of(b) if k.kind.is_expression()]
        b = sub[0] if len(sub) == 1 else None
    return b if b is not None and b.kind == K.DECL_REF_EXPR else None


def _host_samples(launch: ci.Cursor, ancestors: list[ci.Cursor], args: list[ci.Cursor],
                  folded: tuple[int | None, ...], inits: dict[str, ci.Cursor],
                  kinds: list[ci.TypeKind] | None = None) -> tuple[tuple[int, ...] | None, ...]:
    """Joint samples for integer arguments that do not fold, from the loops and ifs around the launch.
    `kinds`: the kind of each argument's canonical type, when already read."""
    from kernlint.frontend.host_samples import launch_arg_samples

    if kinds is None:
        kinds = [a.type.get_canonical().kind for a in args]
    todo = [i for i, _a in enumerate(args) if folded[i] is None and kinds[i] in _INT_KINDS]
    if not todo or not ancestors:
        return ()
    try:
        got = launch_arg_samples(
            launch, list(ancestors), [args[i] for i in todo], inits,
            lambda c: _BINOPS.get(_lib().clang_getCursorBinaryOperatorKind(c)),  # type: ignore[attr-defined]
            lambda c: _UNOPS.get(_lib().clang_getCursorUnaryOperatorKind(c)),  # type: ignore[attr-defined]
            _evaluate)
    except Exception:  # noqa: BLE001 - host code is only a hint: trouble here must not stop the parse
        return ()
    out: list[tuple[int, ...] | None] = [None] * len(args)
    for i, v in zip(todo, got):
        out[i] = v
    return tuple(out) if any(v is not None for v in out) else ()


def _fold_int(c: ci.Cursor, inits: dict[str, ci.Cursor | None], depth: int = 0) -> int | None:
    v = _evaluate(c)
    if isinstance(v, (int, float)):
        return int(v) if abs(v) < 1 << 64 else None  # (inf/NaN fail the comparison too)
    if depth > 8:
        return None
    kids = [k for k in c.get_children() if k.kind.is_expression()]
    if c.kind == K.DECL_REF_EXPR and inits.get(c.spelling) is not None:
        return _fold_int(inits[c.spelling], inits, depth + 1)  # type: ignore[arg-type]
    if c.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CSTYLE_CAST_EXPR, K.CXX_STATIC_CAST_EXPR,
                  K.CXX_FUNCTIONAL_CAST_EXPR) and kids:
        return _fold_int(kids[-1], inits, depth + 1)
    if c.kind == K.BINARY_OPERATOR and len(kids) == 2:
        op = _BINOPS.get(_lib().clang_getCursorBinaryOperatorKind(c))  # type: ignore[attr-defined]
        a = _fold_int(kids[0], inits, depth + 1)
        b = _fold_int(kids[1], inits, depth + 1)
        if a is None or b is None:
            return None
        if op not in ("+", "-", "*", "/", "%", "<<", ">>"):
            return None
        from kernlint.ir import intfold

        return intfold.evaluate([a, op, b])  # bounded: `1 << huge` is unknown, never a huge int
    if c.kind == K.MEMBER_REF_EXPR and kids and kids[0].kind in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR):
        base = kids[0]
        while base.kind == K.UNEXPOSED_EXPR:
            sub = [k for k in base.get_children() if k.kind.is_expression()]
            if not sub:
                break
            base = sub[0]
        if base.kind == K.DECL_REF_EXPR and (base.spelling in inits or f"{base.spelling}.{c.spelling}" in inits
                                             or f"{base.spelling}=0" in inits):
            dims = _fold_dim3_var(base.spelling, inits, depth + 1)
            if dims is not None and c.spelling in ("x", "y", "z"):
                return dims["xyz".index(c.spelling)]
    return None


def _fold_dim3_var(name: str, inits: dict[str, ci.Cursor | None], depth: int) -> tuple[int, int, int] | None:
    """A dim3 local's value at a launch: its initializer (a plain `dim3 b;` is (1, 1, 1)) with the
    members assigned one by one (`b.x = 256`) folded in."""
    init = inits.get(name)
    if f"{name}=0" in inits:
        # Assigned as a whole (`threads = dim3(512, 1)`): the value when every assignment agrees.
        values = {_fold_dim3(v, inits, depth + 1) for k, v in inits.items()
                  if k.startswith(f"{name}=") and k[len(name) + 1:].isdigit() and v is not None}
        init = None
        folded = values.pop() if len(values) == 1 else None
        if folded is None:
            return None
    elif init is None:  # not a local declared here (a parameter, a member): its other members are unknown
        return None
    else:
        folded = _fold_dim3(init, inits, depth + 1)
    dims: list[int | None] = list(folded) if folded is not None else [None, None, None]
    for i, m in enumerate("xyz"):
        key = f"{name}.{m}"
        if key in inits:
            value = inits[key]
            dims[i] = _fold_int(value, inits, depth + 1) if value is not None else None
    if any(d is None for d in dims):
        return None
    return (int(dims[0]), int(dims[1]), int(dims[2]))  # type: ignore[arg-type]


def _text_of(c: ci.Cursor) -> str:
    return " ".join(t.spelling for t in c.get_tokens())


def partial_dim3(c: ci.Cursor, inits: dict[str, ci.Cursor | None], depth: int = 0) -> tuple[str, str, str] | None:
    """A launch-configuration argument that does not fold, component by component: each a decimal
    value where the host fixes it, else the expression as written (`dim3 block(ne13, ne12)` ->
    ("ne13", "ne12", "1")); None when not even its components are known (a dim3 from elsewhere)."""
    if depth > 8:
        return None
    kids = [k for k in c.get_children() if k.kind.is_expression()]
    if "dim3" not in c.type.get_canonical().spelling:
        v = _fold_int(c, inits, depth + 1)
        text = _text_of(c)
        return (str(v) if v is not None else text, "1", "1") if text or v is not None else None
    if c.kind == K.DECL_REF_EXPR:
        init = inits.get(c.spelling)
        if init is None or f"{c.spelling}=0" in inits:
            return None
        dims = partial_dim3(init, inits, depth + 1)
        if dims is None:
            return None
        out = list(dims)
        for i, m in enumerate("xyz"):
            key = f"{c.spelling}.{m}"
            if key in inits:
                value = inits[key]
                v = _fold_int(value, inits, depth + 1) if value is not None else None
                out[i] = str(v) if v is not None else (_text_of(value) if value is not None else "")
        return (out[0], out[1], out[2]) if all(out) else None
    if c.kind in (K.CALL_EXPR, K.INIT_LIST_EXPR) and 1 <= len(kids) <= 3 and not (
            len(kids) == 1 and "dim3" in kids[0].type.get_canonical().spelling):
        parts = []
        for k in kids:
            v = _fold_int(k, inits, depth + 1)
            text = _text_of(k)
            if v is None and not text:
                return None  # a default argument clang did not evaluate
            parts.append(str(v) if v is not None else text)
        parts += ["1"] * (3 - len(parts))
        return (parts[0], parts[1], parts[2])
    if c.kind in (K.CALL_EXPR, K.UNEXPOSED_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR) and len(kids) == 1:
        return partial_dim3(kids[0], inits, depth + 1)
    return None


def _fold_dim3(c: ci.Cursor, inits: dict[str, ci.Cursor | None], depth: int = 0) -> tuple[int, int, int] | None:
    """Fold a launch-configuration argument (an int, `dim3(a, b)`, `{a, b}` or a dim3 variable)."""
    if depth > 8:
        return None
    kids = [k for k in c.get_children() if k.kind.is_expression()]
    spelling_type = c.type.get_canonical().spelling
    if "dim3" not in spelling_type:
        v = _fold_int(c, inits, depth + 1)
        return (v, 1, 1) if v is not None else None
    if c.kind == K.DECL_REF_EXPR and (c.spelling in inits or f"{c.spelling}=0" in inits
                                      or any(f"{c.spelling}.{m}" in inits for m in "xyz")):
        return _fold_dim3_var(c.spelling, inits, depth)
    if c.kind in (K.CALL_EXPR, K.INIT_LIST_EXPR, K.UNEXPOSED_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR):
        if c.kind == K.CALL_EXPR and len(kids) >= 1 and c.spelling == "dim3" and len(kids) <= 3 and not (
                len(kids) == 1 and "dim3" in kids[0].type.get_canonical().spelling):
            vals = [_fold_int(k, inits, depth + 1) for k in kids]
            if any(v is None for v in vals):
                # Default arguments appear as expressions without tokens; clang evaluates them.
                return None
            dims = [int(v) for v in vals if v is not None] + [1, 1, 1]
            return (dims[0], dims[1], dims[2])
        if c.kind == K.INIT_LIST_EXPR:
            vals = [_fold_int(k, inits, depth + 1) for k in kids]
            if any(v is None for v in vals):
                return None
            dims = [int(v) for v in vals if v is not None] + [1, 1, 1]
            return (dims[0], dims[1], dims[2])
        if len(kids) == 1:
            return _fold_dim3(kids[0], inits, depth + 1)
    return None
