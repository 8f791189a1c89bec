"""Seeded mutants of CUDA sources for robustness runs (tests/test_fuzz.py, bench/fuzz.py)."""
from __future__ import annotations

import random
import re
from pathlib import Path

TOKEN_RE = re.compile(rb"[A-Za-z_]\w*|\d+|\S")
KEYWORDS = [b"__global__", b"__device__", b"__shared__", b"template", b"<<<", b">>>", b"#if 0", b"/*",
            b"#define", b"__syncthreads();", b"{", b"}", b"(", b")", b"<", b";"]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One random mutation of `data`: byte flips, truncation, token swaps/duplication, keyword insertion."""
    kind = rng.randrange(6)
    b = bytearray(data)
    if kind == 0 and b:  # byte flips
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if kind == 1:  # truncation
        return data[: rng.randrange(len(data) + 1)]
    toks = [m for m in TOKEN_RE.finditer(data)]
    if not toks:
        return data
    if kind == 2:  # swap two tokens
        a, c = sorted(rng.sample(range(len(toks)), 2)) if len(toks) > 1 else (0, 0)
        ta, tc = toks[a], toks[c]
        return data[: ta.start()] + tc.group() + data[ta.end(): tc.start()] + ta.group() + data[tc.end():]
    if kind == 3:  # delete a token
        t = toks[rng.randrange(len(toks))]
        return data[: t.start()] + data[t.end():]
    if kind == 4:  # duplicate a token
        t = toks[rng.randrange(len(toks))]
        return data[: t.end()] + b" " + t.group() + data[t.end():]
    t = toks[rng.randrange(len(toks))]  # insert a CUDA keyword or punctuator
    return data[: t.start()] + rng.choice(KEYWORDS) + b" " + data[t.start():]


def generated(size: int) -> dict[str, bytes]:
    """Hostile generators at a given size (`size` ~ nesting depth / repetitions)."""
    body = "__global__ void k(const float* a, float* o) {{\n  int i = threadIdx.x;\n{}\n}}\n"
    chain = "  if (i == 0) o[i] = 0;\n" + "".join(f"  else if (i == {k}) o[i] = a[i * {k}];\n" for k in range(1, size))
    return {
        "gen_else_if.cu": body.format(chain).encode(),
        "gen_sum.cu": body.format("  o[i] = " + " + ".join(f"a[i + {k}]" for k in range(size)) + ";").encode(),
        "gen_nested_if.cu": body.format("  " + "if (i < 1000) {" * min(size, 200) + " o[i] = a[i];"
                                        + "}" * min(size, 200)).encode(),
        "gen_parens.cu": body.format("  o[i] = " + "(" * min(size, 200) + "a[i]" + ")" * min(size, 200) + ";").encode(),
        "gen_ternary.cu": body.format("  o[i] = " + "".join(f"i == {k} ? a[{k}] : " for k in range(min(size, 200)))
                                      + "0;").encode(),
        "gen_less.cu": ("template <int N> struct T {};\n" + "T<" * 8 + "\n" + body.format("  a<a<a<a<a<a 0;")).encode(),
        "gen_macros.cu": (f"#define A 1<<{10 ** 9}\n#define B {'9' * 5000}\n#define C {'-' * size}1\n"
                          "__global__ void __launch_bounds__(1<<1100) k2(float* o) { o[threadIdx.x] = A + B; }\n"
                          + body.format("  o[i] = a[i];")).encode(),
        "gen_blank.cu": b"\n" * (size * 100) + body.format("  o[i] = a[i * 2];").encode(),
        "gen_suppress.cu": body.format("".join(f"  // kernlint: disable-next-line=KL101\n  o[i + {k}] = a[i];\n"
                                               for k in range(size))).encode(),
        "gen_unterminated.cu": (body.format("  o[i] = a[i];") + "/* open\n" + body.format("  o[i] = a[2*i];")).encode(),
    }


def seeds(root: Path) -> list[bytes]:
    """The fixture sources under `root`, smallest first."""
    return [p.read_bytes() for p in sorted(root.glob("*.cu"), key=lambda p: (p.stat().st_size, p.name))]
