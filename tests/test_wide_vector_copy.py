"""Whole copies of structs wider than 16 bytes: 16-byte pieces when the struct is 16-byte aligned and
of one scalar type (double4: nvcc emits two ld.v4/st.v4 per element), one access per field otherwise."""
from __future__ import annotations

import re

from kernlint.engine.lint import LintOptions, lint_source

COPY = """
{decl}
__global__ void k(const {t}* __restrict__ a, {t}* __restrict__ o, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{ {t} v = a[i]; o[i] = v; }}
}}
"""


def _coalescing(decl: str, t: str) -> dict[str, str]:
    res = lint_source(COPY.format(decl=decl, t=t), "k.cu", LintOptions(resources=False))
    out = {}
    for d in res.diagnostics:
        if d.code in ("KL101", "KL102"):
            text = d.message + " " + " ".join(d.notes)
            ratio = re.search(r"\(([\d.]+)x ideal\)", d.message).group(1)
            width = re.search(r"(\d+) bytes per lane", text).group(1)
            out[d.code] = f"{ratio}x/{width}B"
    return out


def test_double4_is_copied_in_two_16_byte_pieces() -> None:
    # Lanes 32 bytes apart, 16 bytes each: 32 sectors per request where 16 would do (2x), not the
    # 4x of four 8-byte field accesses.
    assert _coalescing("", "double4") == {"KL101": "2.0x/16B", "KL102": "2.0x/16B"}


def test_a_16_byte_aligned_array_of_eight_floats_is_copied_in_16_byte_pieces() -> None:
    decl = "struct __align__(16) F8 { float v[8]; };"
    assert _coalescing(decl, "F8") == {"KL101": "2.0x/16B", "KL102": "2.0x/16B"}


def test_a_struct_of_doubles_aligned_to_8_is_copied_field_by_field() -> None:
    # Alignment 8 allows no 16-byte vector instruction: four 8-byte accesses, lanes 32 bytes apart.
    decl = "struct D4 { double x, y, z, w; };"
    assert _coalescing(decl, "D4") == {"KL101": "4.0x/8B", "KL102": "4.0x/8B"}


def test_mixed_fields_are_copied_field_by_field() -> None:
    decl = "struct __align__(16) M { double x; float y; float z; double w; double u; };"
    got = _coalescing(decl, "M")
    assert got and all(v.endswith("/8B") or v.endswith("/4B") for v in got.values()), got
