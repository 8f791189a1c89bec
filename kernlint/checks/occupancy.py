"""Glue between the engine and the occupancy rules (KL401-KL405, `occupancy_rules`).

Per kernel it gathers what the calculator needs: the block size and where it came from, registers
(exact from ptxas when nvcc is on PATH, else an estimate from the IR, labelled as such), static
shared bytes (from the declarations), dynamic shared bytes (from the launch) and the launch sites.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kernlint.ir import nodes as ir
from kernlint.checks.occupancy_rules import occupancy_diagnostics
from kernlint.base.diagnostics import Diagnostic
from kernlint.eval.result import KernelResult
from kernlint.project.launch import fold_bound
from kernlint.model.occupancy import DEFAULT_ARCH
from kernlint.frontend.resources import KernelResources, estimate_registers, exact_resources

if TYPE_CHECKING:
    from kernlint.base.options import LintOptions


def _decls(body: ir.Block | None) -> Iterator[ir.VarDecl]:
    """Every variable declaration of a kernel body (declarations live only in statements)."""
    return (n for n in ir.iter_statements(body) if isinstance(n, ir.VarDecl))


def static_shared_bytes(fn: ir.Function, tu: ir.TranslationUnit, results: list[KernelResult]) -> int:
    """Bytes of the kernel's static `__shared__` arrays (extern arrays are dynamic: 0 here).

    Local declarations are read from the IR; file-scope `__shared__` arrays count when the
    evaluation reached them.
    """
    total = 0
    seen: set[str] = set()
    for d in _decls(fn.body):
        if d.shared and not d.extern and d.name not in seen:
            seen.add(d.name)
            total += max(d.ctype.size, 0)
    for r in results[:1]:
        for name, _base, _t in r.shared_layout:
            decl = tu.globals.get(name)
            if decl is not None and decl.shared and not decl.extern and name not in seen:
                seen.add(name)
                total += max(decl.ctype.size, 0)
    return total


def estimated_resources(fn: ir.Function, static_shared: int) -> KernelResources:
    """Registers from the IR: scalar locals and parameters live at once, plus small local arrays."""
    live = 0
    arrays = 0
    for p in fn.params:
        live += 2 if p.ctype.size == 8 else 1
    for n in _decls(fn.body):
        if not n.shared:
            t = n.ctype
            if t.kind == "array":
                words = t.size // 4 if t.size > 0 else 0
                if words <= 128:  # arrays unrolled loops index by constants live in registers
                    arrays += words
            elif t.kind == "struct":
                live += max(1, t.size // 4)
            else:
                live += 2 if t.size == 8 else 1
    regs = estimate_registers(live, 0, arrays)
    return KernelResources(kernel=fn.name, registers=regs, spill_stores=0, spill_loads=0, stack_bytes=0,
                           static_shared_bytes=static_shared, source="estimated",
                           note="estimated from the kernel's variables (no ptxas figures)")


REGISTER_FILE = 65536  # 32-bit registers per SM, sm_70 to sm_120 (CUDA C++ Programming Guide, "Compute Capabilities")
REGISTER_GRANULE = 8  # registers per thread are allocated in units of 256 per warp


def cap_registers(res: KernelResources, max_threads: int, min_blocks: int) -> KernelResources:
    """An estimate under `__launch_bounds__(max_threads, min_blocks)`: the compiler keeps registers at
    or below 64K / (max_threads * min_blocks), rounded down to the allocation granularity (more would
    not let min_blocks blocks fit), spilling the rest (CUDA C++ Programming Guide, "Launch Bounds")."""
    if max_threads <= 0 or min_blocks <= 0:
        return res
    cap = REGISTER_FILE // (max_threads * min_blocks) // REGISTER_GRANULE * REGISTER_GRANULE
    cap = min(255, cap)
    if cap <= 0 or res.registers <= cap:
        return res
    return dataclasses.replace(res, registers=cap, note=(res.note + "; " if res.note else "")
                               + f"capped at {cap} by __launch_bounds__({max_threads}, {min_blocks})")


def _has_args(entries: list[KernelResources], result: KernelResult) -> bool:
    wanted = ", ".join(v for _k, v in result.shape.bindings).replace(" ", "")
    return any(e.template_args.replace(" ", "") == wanted for e in entries)


def _instance_resources(text: str, tu: ir.TranslationUnit, fn: ir.Function, result: KernelResult,
                        options: "LintOptions", arch: str) -> tuple[list[KernelResources], str | None]:
    """ptxas figures for the bound instance of a template kernel nothing in this file instantiates:
    the file is compiled with the kernel made concrete (frontend.instantiate), as the engine evaluated it."""
    from kernlint.frontend.instantiate import instantiate_text

    inst_text = instantiate_text(text, fn.span.line, fn.name, dict(result.shape.bindings))
    if inst_text is None:
        return [], None
    found, note = exact_resources(inst_text, tu.path, arch, options.include_dirs, options.macros)
    return found.get(fn.name, []), note


def _pick(entries: list[KernelResources], result: KernelResult | None) -> KernelResources | None:
    if not entries:
        return None
    if result is not None and result.shape.bindings:
        wanted = ", ".join(v for _k, v in result.shape.bindings).replace(" ", "")
        for e in entries:
            if e.template_args.replace(" ", "") == wanted:
                return e
    return entries[0]


def check_translation_unit(tu: ir.TranslationUnit, text: str, options: "LintOptions",
                           results: list[KernelResult]) -> Iterator[Diagnostic]:
    """KL401-KL405 for every kernel of `tu`."""
    arch = options.arch or DEFAULT_ARCH
    exact: dict[str, list[KernelResources]] = {}
    note: str | None = "ptxas disabled (--no-ptxas)"
    if options.resources and tu.kernels:
        exact, note = exact_resources(text, tu.path, arch, options.include_dirs, options.macros)
    by_kernel: dict[str, list[KernelResult]] = {}
    for r in results:
        by_kernel.setdefault(r.kernel.key, []).append(r)
    macros = dict(tu.macros)
    macros.update(dict(options.defines))
    for fn in tu.kernels:
        kres = by_kernel.get(fn.key, [])
        first = kres[0] if kres else None
        # A template kernel evaluated as an instance (engine.analyse_kernel): its arrays have sizes.
        inst = first.kernel if first is not None and fn.template_params and not first.kernel.template_params else None
        shared = static_shared_bytes(inst or fn, (first.unit or tu) if inst else tu, kres)
        entries = exact.get(fn.name, [])
        inst_note = None
        if inst is not None and first is not None and options.resources and not _has_args(entries, first):
            entries, inst_note = _instance_resources(text, tu, fn, first, options, arch)
        estimate = estimated_resources(inst or fn, shared)
        resources = _pick(entries, first) or estimate
        if resources.source == "estimated" and (inst_note or note):
            resources = dataclasses.replace(resources, note=inst_note or note)
        block_size = None
        block_source = "unknown"
        dynamic = 0
        dynamic_unknown = False
        # Not a guess, nor one of the values tried for a block of runtime values (launch.runtime_blocks).
        if first is not None and first.shape.guess != "default" and not first.shape.guess.startswith("runtime:"):
            block_size = first.shape.threads
            block_source = first.shape.source
            dynamic = first.shape.dynamic_shared or 0
            dynamic_unknown = first.shape.dynamic_shared is None
        bindings = dict(first.shape.bindings) if first is not None else {}
        lb = fold_bound(fn.launch_bounds[0], bindings, macros) if fn.launch_bounds else None
        lb_min = fold_bound(fn.launch_bounds[1], bindings, macros) if len(fn.launch_bounds) > 1 else None
        if resources.source == "estimated" and lb:
            resources = cap_registers(resources, lb, lb_min or 1)
        sites = tuple((ln.span.line, ln.span.column, ln.block[0] * ln.block[1] * ln.block[2],
                       ln.grid[0] * ln.grid[1] * ln.grid[2] if ln.grid is not None else None)
                      for ln in tu.launches if ln.kernel == fn.name and ln.block is not None)
        try:
            yield from occupancy_diagnostics(
                path=tu.path, kernel=fn.name, line=fn.span.line, column=fn.span.column, block_size=block_size,
                block_source=block_source, resources=resources, static_shared_bytes=shared,
                dynamic_shared_bytes=dynamic, arch=arch, threshold=options.occupancy_threshold,
                launch_bounds=lb, launch_sites=sites, launch_bounds_min_blocks=lb_min,
                register_estimate=estimate, dynamic_shared_unknown=dynamic_unknown,
            )
        except ValueError:
            return  # an arch the calculator does not know: the CLI validated it, so nothing to add
