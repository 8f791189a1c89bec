"""Launch shapes: which block (and grid) to evaluate a kernel under, and where that came from.

Sources, strongest first (DESIGN.md): CLI `--block`/`--define`, an inline annotation, config,
`<<<grid, block>>>` launches in the same file, `__launch_bounds__`, then a stated default.
"""
from __future__ import annotations

import dataclasses
import re

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir import nodes as ir
from kernlint.base.frozen import frozen

DEFAULT_1D = (256, 1, 1)
DEFAULT_2D = ((32, 8, 1), (16, 16, 1))


@frozen
class LaunchShape:
    """One configuration to evaluate: block and (optionally) grid dims, template bindings, defines."""

    block: tuple[int, int, int]
    source: str  # human-readable origin: "launch at line 40", "--block", "default", ...
    grid: tuple[int, int, int] | None = None
    bindings: tuple[tuple[str, str], ...] = ()  # template parameter -> argument text
    binding_source: str = ""
    dynamic_shared: int | None = None
    arg_values: tuple[tuple[str, int], ...] = ()  # kernel parameters folded from the launch's arguments
    guess: str = ""  # "" known; "split": thread count known, its 2-D split guessed; "default": both guessed
    # Kernel parameters whose values (in arg_values) come from the loops and ifs around the launch, with
    # the values the host iterations picked (frontend/host_samples.py).
    arg_samples: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # Pointer parameters a launch of the kernel passes offset into their allocation: (parameter, what the
    # launch passes and where: "bufferSrc = bufferIn + padding at FDTD3dGPU.cu:130"); KL103 says "unless".
    pointer_offsets: tuple[tuple[str, str], ...] = ()
    # The distinct template bindings the kernel's launches give (0: not counted); the engine evaluates
    # at most MAX_BINDINGS of them and says so.
    distinct_bindings: int = 0

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def describe(self) -> str:
        b = self.block
        text = f"blockDim = ({b[0]}, {b[1]}, {b[2]}) from {self.source}"
        if self.grid:
            g = self.grid
            text += f"; gridDim = ({g[0]}, {g[1]}, {g[2]})"
        return text


@frozen
class Annotation:
    block: tuple[int, int, int] | None = None
    grid: tuple[int, int, int] | None = None
    defines: tuple[tuple[str, int], ...] = ()


_BLOCK_RES = (
    re.compile(r"kernlint:.*?\bblock(?:Dim)?\s*=\s*[\(\[]\s*([0-9,\s]+)[\)\]]"),
    re.compile(r"//--blockDim\s*=\s*\[?\s*([0-9,\s]+)\]?"),
)
_GRID_RES = (
    re.compile(r"kernlint:.*?\bgrid(?:Dim)?\s*=\s*[\(\[]\s*([0-9,\s]+)[\)\]]"),
    re.compile(r"//--gridDim\s*=\s*\[?\s*([0-9,\s]+)\]?"),
)
_DEFINE_RE = re.compile(r"kernlint:.*?\bdefine\s*\(([^)]*)\)")


MAX_THREADS = 1024  # per block on every architecture since sm_20 (CUDA C++ Programming Guide, Table 21)


def valid_block(b: tuple[int, int, int] | None) -> bool:
    """Whether `b` is a block shape a launch can have (at most 1024 threads; z at most 64)."""
    if b is None:
        return False
    x, y, z = b
    return x > 0 and y > 0 and z > 0 and z <= 64 and x * y * z <= MAX_THREADS


def _dims(text: str) -> tuple[int, int, int] | None:
    parts = [p for p in re.split(r"[\s,]+", text.strip()) if p]
    try:
        vals = [int(p) for p in parts][:3]
    except ValueError:
        return None
    if not vals or any(v <= 0 for v in vals):
        return None
    vals += [1] * (3 - len(vals))
    return (vals[0], vals[1], vals[2])


def parse_annotation(text: str) -> Annotation:
    """Parse `// kernlint: block=(32,8) define(width=1024)` (and GPUVerify's `//--blockDim=[32,8]`)."""
    block = grid = None
    for rx in _BLOCK_RES:
        m = rx.search(text)
        if m:
            block = _dims(m.group(1))
            break
    for rx in _GRID_RES:
        m = rx.search(text)
        if m:
            grid = _dims(m.group(1))
            break
    defines: list[tuple[str, int]] = []
    for m in _DEFINE_RE.finditer(text):
        for item in m.group(1).split(","):
            if "=" in item:
                k, _, v = item.partition("=")
                try:
                    defines.append((k.strip(), int(v.strip(), 0)))
                except ValueError:
                    continue
    return Annotation(block, grid, tuple(defines))


def _uses_y(fn: ir.Function) -> bool:
    """Whether the kernel text reads threadIdx.y (decides between 1-D and 2-D default shapes)."""
    return _mentions(fn.body, "y") if fn.body is not None else False


def _mentions(node: object, axis: str) -> bool:
    """Whether `threadIdx.<axis>` or `blockDim.<axis>` appears under `node`."""
    for n in ir.walk(node):
        if isinstance(n, ir.Member) and n.field == axis:
            base = n.base.operand if isinstance(n.base, ir.Cast) else n.base
            if isinstance(base, ir.Ref) and base.name in ("threadIdx", "blockDim"):
                return True
    return False


def fold_bound(text: str, bindings: dict[str, str], macros: dict[str, int]) -> int | None:
    """Fold a template argument or `__launch_bounds__` argument: literals, macros, bound parameters."""
    from kernlint.frontend.clang_frontend import fold_tokens

    t = text.strip()
    for _ in range(4):
        if t in bindings:
            t = bindings[t].strip()
    toks = re.findall(r"0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|\w+|<<|>>|\S", t)
    known = dict(macros)
    for name, value in bindings.items():
        if name not in known:
            folded = fold_tokens(re.findall(r"\w+|<<|>>|\S", value), macros)
            if folded is not None:
                known[name] = folded
    return fold_tokens(toks, known) if toks else None


MAX_SHAPES = 3
MAX_BINDINGS = 6  # distinct template bindings evaluated per kernel (engine.py)
# Distinct bindings offered to the engine, which evaluates the first MAX_BINDINGS whose instance parses
# (engine._usable_bindings): a binding naming a type of a missing header is passed over for the next.
MAX_BINDING_TRIES = 24


def where(ln: ir.Launch) -> str:
    """`line 40` for a launch in this file, `runner.cu:193` for one elsewhere in the project."""
    return ln.site or f"line {ln.span.line}"


def launch_shapes(fn: ir.Function, tu: ir.TranslationUnit, *, cli_block: tuple[int, int, int] | None = None,
                  config_block: tuple[int, int, int] | None = None,
                  project_launches: tuple[ir.Launch, ...] = (),
                  project_instantiations: tuple[tuple[tuple[str, ...], str], ...] = (),
                  cli_defines: dict[str, int] | None = None,
                  ) -> tuple[list[LaunchShape], dict[str, int]]:
    """`_launch_shapes`, each shape carrying the pointer offsets the kernel's launches pass."""
    shapes, defines = _launch_shapes(fn, tu, cli_block=cli_block, config_block=config_block,
                                     project_launches=project_launches,
                                     project_instantiations=project_instantiations, cli_defines=cli_defines)
    offsets = pointer_offsets(fn, tu, project_launches)
    if offsets:
        shapes = [dataclasses.replace(s, pointer_offsets=offsets) for s in shapes]
    return shapes, defines


def pointer_offsets(fn: ir.Function, tu: ir.TranslationUnit,
                    project_launches: tuple[ir.Launch, ...] = ()) -> tuple[tuple[str, str], ...]:
    """(pointer parameter, "what the launch passes at where") for every launch of `fn` that passes one
    of its pointer parameters offset into the allocation (frontend/pointer_offsets.py)."""
    launches = [ln for ln in tu.launches if ln.kernel == fn.name and (not ln.kernel_key or ln.kernel_key == fn.key)]
    launches += list(project_launches)
    out: dict[str, str] = {}
    for ln in launches:
        for p, off in zip(fn.params, ln.arg_offsets):
            if off and p.ctype.kind == "pointer" and p.name not in out:
                out[p.name] = f"{off} at {where(ln)}"
    return tuple(out.items())


def _launch_shapes(fn: ir.Function, tu: ir.TranslationUnit, *, cli_block: tuple[int, int, int] | None = None,
                   config_block: tuple[int, int, int] | None = None,
                   project_launches: tuple[ir.Launch, ...] = (),
                   project_instantiations: tuple[tuple[tuple[str, ...], str], ...] = (),
                   cli_defines: dict[str, int] | None = None,
                   ) -> tuple[list[LaunchShape], dict[str, int]]:
    """Return the shapes to evaluate `fn` under (at least one) and the annotation's defines.

    `project_launches` are launches of `fn` found elsewhere in the project (or inside host function
    templates of this file, bound through their calls); they replace this file's launches at the
    same line. `project_instantiations` are explicit instantiations elsewhere: (arguments, site).
    """
    kernel_ann = parse_annotation(fn.annotation)
    file_ann = parse_annotation(tu.file_annotation)
    if not valid_block(kernel_ann.block):
        kernel_ann = Annotation(None, kernel_ann.grid, kernel_ann.defines)
    if not valid_block(file_ann.block):
        file_ann = Annotation(None, file_ann.grid, file_ann.defines)
    defines = dict(file_ann.defines)
    defines.update(kernel_ann.defines)
    grid_ann = kernel_ann.grid or file_ann.grid

    # Match by the resolved declaration when clang gave one (overloaded kernels share a name).
    launches = [ln for ln in tu.launches if ln.kernel == fn.name and (not ln.kernel_key or ln.kernel_key == fn.key)]
    if project_launches:
        here = {ln.span.line for ln in project_launches if not ln.site}
        # (A launch in a macro's argument spans the macro's use; the index names the line it is written at.)
        launches = [ln for ln in launches if ln.span.line not in here and ln.spelled_line not in here] \
            + _by_chain(project_launches)
    bindings_list = _template_bindings(fn, tu, launches, project_instantiations)
    distinct = len({_launch_binding(fn, ln)[0] for ln in launches}) if fn.template_params else 0

    def with_bindings(block: tuple[int, int, int], source: str, guess: str = "") -> list[LaunchShape]:
        return [LaunchShape(block, source, grid_ann, b, bs, guess=guess) for b, bs in bindings_list]

    if cli_block:
        return with_bindings(cli_block, "--block"), defines
    if kernel_ann.block:
        return with_bindings(kernel_ann.block, "annotation above the kernel"), defines
    if file_ann.block:
        return with_bindings(file_ann.block, "file annotation"), defines
    if config_block:
        return with_bindings(config_block, "[tool.kernlint] block"), defines
    shapes: list[LaunchShape] = []
    seen = set()
    bound = _bound(fn, tu, bindings_list, {**defines, **(cli_defines or {})})
    for ln in launches:
        if ln.block is None and ln.block_dims:
            # A block of runtime values (`dim3 block(ne13, ne12)`): evaluated over plausible values of
            # each, and combine() keeps only what every one of them shows (RUNTIME_VALUES).
            binding, bsource = _launch_binding(fn, ln)
            argv = tuple((p.name, v) for p, v in zip(fn.params, ln.args) if v is not None)
            for block, text in runtime_blocks(ln.block_dims, bound, dict(ln.dim_values)):
                key = (block, binding, ln.args, ln.arg_samples)
                if key in seen:
                    continue
                seen.add(key)
                shapes.append(LaunchShape(block, f"launch at {where(ln)} with {text}", ln.grid or grid_ann, binding,
                                          bsource, ln.shared_bytes, argv, guess=f"runtime:{where(ln)}"))
            if fn.template_params and len({s.bindings for s in shapes}) >= MAX_BINDING_TRIES:
                break  # (each binding's runtime blocks kept together: combine() needs them all)
            continue
        if not valid_block(ln.block):
            continue  # unknown, or a shape the launch itself would reject (KL404/launch error territory)
        assert ln.block is not None
        binding, bsource = _launch_binding(fn, ln)
        key = (ln.block, binding, ln.args, ln.arg_samples)
        if key in seen:
            continue
        seen.add(key)
        argv = tuple((p.name, v) for p, v in zip(fn.params, ln.args) if v is not None)
        # Arguments the host loops around the launch vary (frontend/host_samples.py): one shape per
        # host iteration picked, so relations between them hold and the worst launch is reported.
        argsamples = tuple((p.name, v) for p, v in zip(fn.params, ln.arg_samples) if v is not None)
        variants = [argv]
        if argsamples:
            n = min(len(v) for _name, v in argsamples)
            variants = list(dict.fromkeys(argv + tuple((nm, v[k]) for nm, v in argsamples) for k in range(n)))
        for av in variants:
            shapes.append(LaunchShape(ln.block, f"launch at {where(ln)}", ln.grid or grid_ann, binding,
                                      bsource, ln.shared_bytes, av, arg_samples=argsamples))
        if len({s.bindings for s in shapes} if fn.template_params else shapes) \
                >= (MAX_BINDING_TRIES if fn.template_params else MAX_SHAPES):
            break
    if shapes:
        if distinct > 1:
            shapes = [dataclasses.replace(s, distinct_bindings=distinct) for s in shapes]
        return shapes, defines
    if fn.launch_bounds:
        for bindings, bsource in bindings_list:
            n = fold_bound(fn.launch_bounds[0], dict(bindings), {**tu.macros, **defines, **(cli_defines or {})})
            if n and 0 < n <= MAX_THREADS:
                if _uses_y(fn):
                    out = [LaunchShape(s, f"__launch_bounds__({n}), a common 2-D split", grid_ann, bindings, bsource,
                                       guess="split")
                           for s in _split_2d(n)]
                    if out:
                        shapes.extend(out)
                        continue
                shapes.append(LaunchShape((n, 1, 1), f"__launch_bounds__({n})", grid_ann, bindings, bsource))
        if shapes:
            return shapes, defines
    why = ("the block size at its launch is not a constant kernlint can fold" if launches
           else "no launch found")
    if _uses_y(fn):
        out = []
        for s in DEFAULT_2D:
            out.extend(with_bindings(s, f"default 2-D shape ({why})", guess="default"))
        return out, defines
    return with_bindings(DEFAULT_1D, f"default ({why})", guess="default"), defines


# Values tried for a runtime component of a launch's block (issue 28, item 3): one thread (a serial
# dimension, `dim3 block(ne13, ne12)` with ne13 == 1), one warp, and a common block size; the kernel's
# __launch_bounds__ is added when it folds. A warning must hold under every combination that is a
# valid block (engine.combine), so a finding that needs one of them to be large is not a warning.
RUNTIME_VALUES = (1, 32, 256)
MAX_RUNTIME_SHAPES = 6  # combinations evaluated per launch (the first in order of the values)


def runtime_blocks(dims: tuple[str, ...], bound: int | None,
                   passed: dict[str, tuple[int, ...]] | None = None) -> list[tuple[tuple[int, int, int], str]]:
    """The block shapes to evaluate a launch whose block components `dims` are partly runtime
    expressions under, each with the text that says which values it took ("ne13 = 1, ne12 = 32").
    `passed`: for a component that is a parameter of the host function, the values its callers pass."""
    import itertools

    values = list(RUNTIME_VALUES)
    if bound is not None and bound not in values:
        values.append(bound)
    limit = min(MAX_THREADS, bound) if bound else MAX_THREADS
    names = list(dict.fromkeys(d for d in dims if not d.isdigit()))  # one value per distinct expression
    # A choice between two constants (`big ? 256 : 128`) can only be one of them: those, not guesses.
    choices = {n: (passed or {}).get(n) or _constant_choice(n) for n in names}
    tried = [choices[n] or tuple(values) for n in names]
    out: list[tuple[tuple[int, int, int], str]] = []
    for combo in itertools.product(*tried):
        env = dict(zip(names, combo))
        b = tuple(int(d) if d.isdigit() else env[d] for d in dims[:3])
        block = (b[0], b[1], b[2]) if len(b) == 3 else None
        if block is None or not valid_block(block) or block[0] * block[1] * block[2] > limit:
            continue
        if block == (1, 1, 1) and names:
            continue  # one thread: its lanes share no request and take no branch apart, so it says nothing
        text = ", ".join(f"{n} = {v}" for n, v in env.items())
        how = "; ".join(f"`{n}` is {' or '.join(map(str, choices[n]))} at every call" if n in (passed or {})
                        else f"`{n}` is one of {' or '.join(map(str, choices[n]))}" for n in names if choices[n])
        if any(not choices[n] for n in names):
            how = "; ".join(x for x in (how, f"the block's runtime values, each tried as {', '.join(map(str, values))}")
                            if x)
        out.append((block, f"{text} ({how})"))
        if len(out) >= MAX_RUNTIME_SHAPES:
            break
    return out


_CHOICE_RE = lazy_compile(r"^\(?\s*(.+?)\s*\?\s*\(?\s*(\d+)\s*\)?\s*:\s*\(?\s*(\d+)\s*\)?\s*\)?$")


def _constant_choice(text: str) -> tuple[int, ...]:
    """The two values of a block component written as a choice between integer constants (`big ? 256 :
    128`, as its tokens are joined), in that order; () for anything else."""
    m = _CHOICE_RE.match(text.strip())
    if m is None or "?" in m.group(1):
        return ()
    return tuple(dict.fromkeys((int(m.group(2)), int(m.group(3)))))


def _bound(fn: ir.Function, tu: ir.TranslationUnit, bindings_list: list, defines: dict[str, int]) -> int | None:
    """The kernel's `__launch_bounds__` thread count when it folds (the first binding's)."""
    if not fn.launch_bounds:
        return None
    for bindings, _source in bindings_list:
        n = fold_bound(fn.launch_bounds[0], dict(bindings), {**tu.macros, **defines})
        if n and 0 < n <= MAX_THREADS:
            return n
    return None


def _split_2d(n: int) -> list[tuple[int, int, int]]:
    out = []
    for x in (32, 16):
        if n % x == 0 and n // x > 1:
            out.append((x, n // x, 1))
    return out


def _by_chain(launches: tuple[ir.Launch, ...]) -> list[ir.Launch]:
    """The project's launches of one kernel in the order their bindings are tried: one copy of each
    launch (its site and host chain `via`) in turn, so that many copies of one launch (a switch macro's
    lambda per flag combination) do not crowd out the other chains (`run<float>` and `run<half>`); the
    index's order where each launch has one copy. Chain j starts at its
    copy j, so that the first round already varies the copies' flags too. The same order whichever
    file is linted."""
    groups: dict[tuple[str, int, str], list[ir.Launch]] = {}
    for ln in launches:
        groups.setdefault((ln.site, ln.span.line, ln.via), []).append(ln)
    chains = list(groups.values())
    out: list[ir.Launch] = []
    for i in range(max((len(g) for g in chains), default=0)):
        out.extend(g[(i + j) % len(g)] for j, g in enumerate(chains) if i < len(g))
    return out


def _launch_binding(fn: ir.Function, ln: ir.Launch) -> tuple[tuple[tuple[str, str], ...], str]:
    """The template binding of one launch and where it came from ("" when the kernel is no template).

    An argument the launch site could not bind (a host template parameter without a call that binds
    it) is left out; a type parameter left out is assumed float, and the source says so.
    """
    if not fn.template_params or not ln.template_args or len(ln.template_args) > len(fn.template_params):
        return (), ""
    pairs = [(p.name, a) for p, a in zip(fn.template_params, ln.template_args) if a]
    source = f"the launch at {where(ln)}" + (f" via {ln.via}" if ln.via else "")
    if ln.deduced:
        source += ", deduced from its argument types"
    missing = [p for p, a in zip(fn.template_params, ln.template_args) if not a]
    assumed = [p.name for p in missing if p.is_type]
    pairs += [(n, "float") for n in assumed]
    if assumed:
        source += f"; {', '.join(assumed)} assumed float (not bound at that launch)"
    unknown = [p.name for p in missing if not p.is_type]
    if unknown:
        source += f"; {', '.join(unknown)} unknown"
    order = {p.name: i for i, p in enumerate(fn.template_params)}
    return tuple(sorted(pairs, key=lambda kv: order[kv[0]])), source


def _template_bindings(fn: ir.Function, tu: ir.TranslationUnit, launches: list[ir.Launch],
                       project_instantiations: tuple[tuple[tuple[str, ...], str], ...] = (),
                       ) -> list[tuple[tuple[tuple[str, str], ...], str]]:
    """Template argument bindings for `fn`: from launches, explicit instantiations, else assumed."""
    if not fn.template_params:
        return [((), "")]
    names = [p.name for p in fn.template_params]
    found: list[tuple[tuple[tuple[str, str], ...], str]] = []
    for ln in launches:
        b, source = _launch_binding(fn, ln)
        if b and b not in [f[0] for f in found]:
            found.append((b, source))
    insts = [(args, "explicit instantiation") for name, args in tu.instantiations if name == fn.name]
    insts += [(args, f"explicit instantiation at {site}") for args, site in project_instantiations]
    for args, source in insts:
        if len(args) <= len(names):
            b = tuple(zip(names, args))
            if b not in [f[0] for f in found]:
                found.append((b, source))
    if found:
        return found[:MAX_BINDING_TRIES]
    # No instantiation in the file: type parameters are assumed float (stated in every finding);
    # non-type parameters stay symbolic (sampled like runtime sizes).
    assumed = tuple((p.name, "float") for p in fn.template_params if p.is_type)
    return [(assumed, "assumed (no instantiation in the file)")]
