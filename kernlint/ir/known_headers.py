"""Declarations of well-known library types (and standard type traits) for headers kernlint stubs when they are missing.

A missing `#include` is read as an empty file. For a few library headers whose types have a
documented, fixed layout that device code indexes (`cufftComplex *a; a[i].x`, a `Vertex` struct of
DirectXMath `XMFLOAT3`s), an empty stub would leave every access through them unknown; the stub
holds those types instead. Only layouts are declared (what the evaluator needs for addresses), no
functions whose values kernlint would have to model. A real header, when found, always wins: stubs
are searched after every include directory.
"""
from __future__ import annotations

import posixpath
import re

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir.known_cub import CUB, is_cub
from kernlint.ir.known_pipeline import async_stub
from kernlint.ir.known_torch import TORCH, is_torch

# cuComplex.h (CUDA Toolkit): `typedef float2 cuFloatComplex; typedef double2 cuDoubleComplex;
# typedef cuFloatComplex cuComplex;` (float2/double2 come from the shim's vector types).
_CUCOMPLEX = """\
#ifndef KERNLINT_KNOWN_CUCOMPLEX
#define KERNLINT_KNOWN_CUCOMPLEX
typedef float2 cuFloatComplex;
typedef double2 cuDoubleComplex;
typedef cuFloatComplex cuComplex;
#endif
"""

# cufft.h (cuFFT API reference, "cufftComplex"/"cufftReal"): `typedef float cufftReal; typedef double
# cufftDoubleReal; typedef cuComplex cufftComplex; typedef cuDoubleComplex cufftDoubleComplex;`.
# cufftXt.h and cufftw.h include cufft.h.
_CUFFT = _CUCOMPLEX + """\
#ifndef KERNLINT_KNOWN_CUFFT
#define KERNLINT_KNOWN_CUFFT
typedef float cufftReal;
typedef double cufftDoubleReal;
typedef cuComplex cufftComplex;
typedef cuDoubleComplex cufftDoubleComplex;
#endif
"""

# DirectXMath.h (Microsoft Learn, "XMFLOAT2/3/4 structure"): plain structs of 2, 3, 4 floats x, y,
# z, w; the A-suffixed ones are the same fields aligned to 16 bytes (XM_ALIGNED_STRUCT(16)).
_DIRECTXMATH = """\
#ifndef KERNLINT_KNOWN_DIRECTXMATH
#define KERNLINT_KNOWN_DIRECTXMATH
namespace DirectX {
struct XMFLOAT2 { float x, y; };
struct XMFLOAT3 { float x, y, z; };
struct XMFLOAT4 { float x, y, z, w; };
struct __attribute__((aligned(16))) XMFLOAT2A { float x, y; };
struct __attribute__((aligned(16))) XMFLOAT3A { float x, y, z; };
struct __attribute__((aligned(16))) XMFLOAT4A { float x, y, z, w; };
struct XMINT2 { int x, y; };
struct XMINT3 { int x, y, z; };
struct XMINT4 { int x, y, z, w; };
struct XMUINT2 { unsigned int x, y; };
struct XMUINT3 { unsigned int x, y, z; };
struct XMUINT4 { unsigned int x, y, z, w; };
}
#endif
"""


KNOWN: dict[str, str] = {
    "cuComplex.h": _CUCOMPLEX,
    "cufft.h": _CUFFT,
    "cufftXt.h": _CUFFT,
    "cufftw.h": _CUFFT,
    "DirectXMath.h": _DIRECTXMATH,
}


# Standard library headers whose templates are stubbed the same way when missing. Not offered to
# `declarations_for`: --confirm's compiler declares what it needs of them itself (frontend/device_source.py).
STANDARD: dict[str, str] = {
}


def stub_text(name: str) -> str:
    """The text of the stub for the missing include `name` (as written): known types, else empty."""
    if is_cub(name):
        return CUB  # (by path: `block_load.cuh` alone names no library)
    if is_torch(name):
        return TORCH  # (by path: `torch/`, `ATen/`, `c10/`)
    text = async_stub(name)  # (by its last two components: `cuda/pipeline`)
    if text is not None:
        return text
    base = posixpath.basename(name.replace("\\", "/"))
    return KNOWN.get(base) or STANDARD.get(base, "")


_NAME_RE = lazy_compile(r"typedef \w+ (\w+);|struct (?:__attribute__\(\(aligned\(16\)\)\) )?(\w+) \{")


def _declared(text: str) -> tuple[str, ...]:
    return tuple(a or b for a, b in _NAME_RE.findall(text))


def declarations_for(code: str) -> str:
    """The known library declarations `code` uses without declaring them (for a compiler that has
    no such header, NVRTC: --confirm blanks the includes it cannot resolve)."""
    out = []
    for text in dict.fromkeys(KNOWN.values()):  # (each text once)
        names = _declared(text)
        used = [n for n in names if re.search(rf"\b{n}\b", code)]
        if used and not any(re.search(rf"(?:typedef[^;]*\b|struct\s+){n}\s*[;{{]", code) for n in used):
            out.append(text)
    return "".join(out)
