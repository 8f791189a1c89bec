"""--confirm's seeding of sampled data: the GPU run sees the values the static evaluation sampled for
warp-uniform loads and unwritten `__constant__`/`__device__` globals (eval/uniform_data.py), so a
finding that depends on them is measured under the same assumption instead of on zeroed memory.

A seeded load site still executes its load (and is traced like any access); only the value it yields
is replaced (`__kl_ldv`/`__kl_ldp` in instrument.SEED_PRELUDE): an integer by its sampled value for the
launch's sample, a pointer by the start of an allocation of its own (256-byte aligned, as the evaluator
takes it). A global is written into the module's memory before each launch. The evaluator names the
symbol each load site took (`KernelResult.load_sites`): two sites that read the same words share one
symbol, and both return its value. A run is *seeded* when every load site of its evaluation was
rewritten and every sampled global written; only then are findings that depend on loaded values judged.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kernlint.ir import nodes as ir
from kernlint.confirm.instrument import Site
from kernlint.eval import uniform_data

MAXV = 128  # instrument.SEED_PRELUDE's __KL_MAXV
MAXP = 128  # __KL_MAXP
PSTRIDE = 1 << 20  # __KL_PSTRIDE: bytes between two loaded-pointer allocations
_SCALARS = {("int", 1, True): "int8", ("int", 1, False): "uint8", ("int", 2, True): "int16",
            ("int", 2, False): "uint16", ("int", 4, True): "int32", ("int", 4, False): "uint32",
            ("int", 8, True): "int64", ("int", 8, False): "uint64"}


def _span(site_symbol: str) -> tuple[ir.Span, str] | None:
    """The source range of a load site's symbol (`@load:L:C:EL:EC[:helper]`) and its helper, if any."""
    parts = site_symbol[len(uniform_data.PREFIX):].split(":")
    try:
        line, col, end_line, end_col = (int(x) for x in parts[:4])
    except ValueError:
        return None
    return ir.Span(line, col, end_line, end_col), (parts[4] if len(parts) > 4 else "")


def seed_sites(results: list[Any]) -> tuple[Site, ...]:
    """One rewrite site per load site (of this file) any evaluation sampled; ids are slots per kind."""
    out: dict[tuple[str, int, int, int, int], Site] = {}
    counts = {"loadval": 0, "loadptr": 0}
    for kr in results:
        for site_symbol, target in getattr(kr, "load_sites", ()):
            got = _span(site_symbol)
            if got is None or got[1]:
                continue  # inside a helper of another file: named by its call, which cannot be rewritten
            sp = got[0]
            kind = "loadptr" if target.startswith(uniform_data.PTR_PREFIX) else "loadval"
            key = (kind, sp.line, sp.column, sp.end_line, sp.end_column)
            if key in out or counts[kind] >= (MAXP if kind == "loadptr" else MAXV):
                continue
            out[key] = Site(counts[kind], kind, sp)
            counts[kind] += 1
    return tuple(out.values())


@dataclass(frozen=True)
class LaunchSeeds:
    """What one launch of one evaluation sets (the JSON the probe reads), and whether it is complete."""

    spec: dict[str, Any]
    complete: bool
    why: str = ""  # what could not be seeded, when not complete


def _site_key(kind: str, sp: ir.Span) -> tuple[str, int, int, int, int]:
    return (kind, sp.line, sp.column, sp.end_line, sp.end_column)


def _global_field(unit: ir.TranslationUnit | None, name: str) -> tuple[str, int, str] | None:
    """(global, byte offset, dtype) of a sampled global or a field path of one (`d_common.rows`)."""
    if unit is None:
        return None
    root, *path = name.split(".")
    decl = unit.globals.get(root)
    if decl is None or decl.shared:
        return None  # (an initializer does not matter: the evaluator sampled the value, so the run does too)
    t, off = decl.ctype, 0
    for f in path:
        if t.kind != "struct":
            return None
        fld = t.field(f)
        if fld is None or fld.offset < 0:
            return None
        t, off = fld.ctype, off + fld.offset
    dt = _SCALARS.get((t.kind, t.size, t.signed))
    return (root, off, dt) if dt else None


def launch_seeds(kr: Any, placed: tuple[Site, ...], sample: int) -> LaunchSeeds:
    """The seeds of `kr`'s launch for evaluation sample `sample` (0 or 1)."""
    where = {_site_key(s.kind, s.span): s for s in placed}
    assumed = dict(kr.assumed)
    have = [0] * (MAXV // 32)
    phave = [0] * (MAXP // 32)
    vals = [0] * MAXV
    pslot = [0] * MAXP
    pointers: dict[str, int] = {}
    missing: list[str] = []
    for site_symbol, target in getattr(kr, "load_sites", ()):
        got = _span(site_symbol)
        pointer = target.startswith(uniform_data.PTR_PREFIX)
        site = where.get(_site_key("loadptr" if pointer else "loadval", got[0])) if got and not got[1] else None
        if site is None:
            missing.append(uniform_data.short(site_symbol) if not pointer else f"the pointer loaded at line "
                           f"{got[0].line if got else '?'}")
            continue
        if pointer:
            pslot[site.id] = pointers.setdefault(target, len(pointers))
            phave[site.id >> 5] |= 1 << (site.id & 31)
        else:
            values = assumed.get(target)
            if not values:
                missing.append(uniform_data.short(site_symbol))
                continue
            vals[site.id] = int(values[min(sample, len(values) - 1)])
            have[site.id >> 5] |= 1 << (site.id & 31)
    params = {p.name for p in kr.kernel.params}
    writes: list[dict[str, Any]] = []
    for name, values in kr.assumed:
        root = name.split(".")[0]
        if uniform_data.is_loaded(name) or root in params or name.startswith(("blockIdx", "gridDim")):
            continue
        unit = getattr(kr, "unit", None)
        if unit is None or root not in unit.globals:
            continue
        fld = _global_field(unit, name)
        if fld is None:
            missing.append(f"the global {name}")
            continue
        writes.append({"name": fld[0], "offset": fld[1], "dtype": fld[2],
                       "value": int(values[min(sample, len(values) - 1)])})
    spec = {"have": have, "phave": phave, "vals": vals, "pslot": pslot}
    spec = {"hex": _blob(spec), "nptr": len(pointers), "globals": writes, "pstride": PSTRIDE,
            "pbase_offset": PBASE_OFFSET}
    why = ("not seeded on the GPU: " + ", ".join(dict.fromkeys(missing))) if missing else ""
    return LaunchSeeds(spec, not missing, why)


PBASE_OFFSET = MAXV * 8  # where `pbase` lies in __kl_seed_t (the probe writes it)


def _blob(spec: dict[str, Any]) -> str:
    """The bytes of `__constant__ __kl_seed_t __kl_s` (instrument.SEED_PRELUDE's layout), as hex, with
    `pbase` 0 (the probe sets it at PBASE_OFFSET once it has allocated the pointers' memory)."""
    raw = struct.pack(f"<{MAXV}q", *spec["vals"]) + struct.pack("<Q", 0)
    raw += struct.pack(f"<{MAXV // 32}I", *spec["have"]) + struct.pack(f"<{MAXP // 32}I", *spec["phave"])
    raw += struct.pack(f"<{MAXP}I", *spec["pslot"])
    raw += b"\0" * (-len(raw) % 8)
    return raw.hex()
