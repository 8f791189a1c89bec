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


def hostile(scale: float = 1.0) -> dict[str, bytes]:
    """The issue's hostile inputs at the sizes it quotes (`scale` < 1 shrinks them for a quick run).

    Each one crashed, hung or exhausted kernlint before isolation and budgets; each must now cost at
    most its own file (a KL900/KL904 for it) within the timeout.
    """
    def n(k: int) -> int:
        return max(2, int(k * scale))

    body = "__global__ void k(const float* a, float* o) {{\n  int i = threadIdx.x;\n{}\n}}\n"
    levels = min(20, n(20))
    macros = "".join(f"#define M{j} M{j - 1} M{j - 1}\n" for j in range(1, levels + 1))
    out = {
        "h_unary_minus.cu": body.format("  o[i] = " + "- " * n(3000) + "1;"),
        "h_template_ids.cu": "template <class T> struct W {};\n" + body.format(
            "  " + "W<" * n(2700) + "int" + ">" * n(2700) + " w; o[i] = a[i];"),
        "h_nested_if.cu": body.format("  " + "if (i < 1000) {" * n(6200) + " o[i] = a[i];" + "}" * n(6200)),
        "h_else_if.cu": body.format("  if (i == 0) o[i] = 0;\n" + "".join(
            f"  else if (i == {k}) o[i] = a[i * {k}];\n" for k in range(1, n(6200)))),
        "h_sum.cu": body.format("  o[i] = " + " + ".join(f"a[i + {k}]" for k in range(n(14200))) + ";"),
        "h_ternary.cu": body.format("  o[i] = " + "".join(f"i == {k} ? a[{k}] : " for k in range(n(16500))) + "0;"),
        "h_macro_doubling.cu": "#define M0 a[i]+\n" + macros + body.format(f"  o[i] = M{levels} 0;"),
        "h_less_22.cu": "T<" * n(22) + "\n" + body.format("  o[i] = a[i];"),
        "h_less_26.cu": "T<" * n(26) + "\n" + body.format("  o[i] = a[i];"),
        "h_less_body.cu": body.format("  int a0 = 0; " + "a0<" * n(26) + "0;"),
        "h_blank_lines.cu": "\n" * n(200_000) + body.format("  o[i] = a[i * 2];"),
        "h_suppressions.cu": body.format("".join(f"  // kernlint: ignore[KL101]\n  o[i + {k}] = a[i * 2];\n"
                                                 for k in range(n(40_000))))
        ,
        "h_kl201_arrays.cu": "__global__ void k(float* o) {\n" + "".join(
            f"  __shared__ float s{j}[32][32];\n  s{j}[threadIdx.x][0] = 1; o[threadIdx.x + {j}] = s{j}[0][threadIdx.x];\n"
            for j in range(64)) + "}\n",
        "h_findings.cu": body.format("".join(f"  o[i * 32 + {k}] = a[i * 64];\n" for k in range(n(20_000)))),
        "h_macro_folding.cu": ("#define A 1<<20000000000\n#define B ((1<<4000)/(1<<3990))/((1<<900)/(1<<899))\n"
                               f"#define C {'9' * 20000}\n#define D {'-' * 5000}1\n"
                               "__global__ void __launch_bounds__(1<<1100) k2(float* o) { o[threadIdx.x] = 1; }\n"
                               + body.format("  o[i] = a[i];")),
        "h_unterminated_comment.cu": body.format("  o[i] = a[i];") + "/* open\n" + body.format("  o[i] = a[2*i];"),
        "h_unterminated_if.cu": body.format("  o[i] = a[i];") + "#if 0\n" + body.format("  o[i] = a[2*i];"),
        "h_include_zero.cu": '#include "/dev/zero"\n' + body.format("  o[i] = a[i * 2];"),
    }
    return {k: v.encode() for k, v in out.items()}


# C/C++ tokens for `token_mutate`: identifiers, numbers (with suffixes and exponents), string and character
# literals, comments, the multi-character punctuators (longest first), then any other single character.
CXX_TOKEN_RE = re.compile(
    rb"[A-Za-z_]\w*|\.?\d(?:[eEpP][+-]|[\w.])*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|//[^\n]*|/\*.*?\*/"
    rb"|<<<|>>>|<<=|>>=|->\*|\.\.\.|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|##|\S", re.S)
EXTREME_NUMBERS = [b"0", b"-1", b"1", b"2147483647", b"2147483648", b"4294967296", b"-9223372036854775808",
                   b"99999999999999999999999999999999", b"1e308", b"0x7fffffff", b"0.5", b"1<<62"]


def token_mutate(data: bytes, rng: random.Random, donors: list[bytes]) -> bytes:
    """One to four token-level edits of `data`: a token replaced by another token of the same file (an
    identifier by an identifier), a number by an extreme one, a span of tokens deleted, duplicated, moved,
    or spliced in from a donor file (another source of the corpus). The spaces between tokens are kept,
    so the mutant reads like code (unlike the byte flips of `mutate`)."""
    toks = [(m.start(), m.end()) for m in CXX_TOKEN_RE.finditer(data)]
    if len(toks) < 2:
        return data
    words = [data[a:b] for a, b in toks]
    gaps = [data[:toks[0][0]]] + [data[toks[i][1]:toks[i + 1][0]] for i in range(len(toks) - 1)] \
        + [data[toks[-1][1]:]]
    # A mutant is the token list with, per token, the space before it (gaps[0] leads the file).
    items = list(zip(gaps[:-1], words))
    tail = gaps[-1]
    idents = [w for w in words if re.fullmatch(rb"[A-Za-z_]\w*", w)]
    for _ in range(rng.randint(1, 4)):
        n = len(items)
        if n < 2:
            break
        op = rng.randrange(7)
        i = rng.randrange(n)
        span = rng.randint(1, min(24, n - i))
        if op == 0:  # a token replaced by another of the file, an identifier by an identifier
            gap, w = items[i]
            pool = idents if idents and re.fullmatch(rb"[A-Za-z_]\w*", w) else words
            items[i] = (gap, rng.choice(pool))
        elif op == 1:  # a number replaced by an extreme value (else a random token made one)
            nums = [k for k, (_g, w) in enumerate(items) if w[:1].isdigit()]
            k = rng.choice(nums) if nums else i
            items[k] = (items[k][0], rng.choice(EXTREME_NUMBERS))
        elif op == 2:  # a span deleted
            del items[i:i + span]
        elif op == 3:  # a span duplicated in place
            items[i + span:i + span] = items[i:i + span]
        elif op == 4:  # a span moved elsewhere
            moved = items[i:i + span]
            del items[i:i + span]
            j = rng.randrange(len(items) + 1)
            items[j:j] = moved
        elif op == 5:  # a span spliced in from a donor file
            donor = rng.choice(donors) if donors else data
            dt = [(m.start(), m.end()) for m in CXX_TOKEN_RE.finditer(donor)]
            if dt:
                a = rng.randrange(len(dt))
                b = min(len(dt), a + rng.randint(1, 40))
                items[i:i] = [(b" ", donor[dt[k][0]:dt[k][1]]) for k in range(a, b)]
        else:  # two neighbouring tokens swapped
            if i + 1 < n:
                (g1, w1), (g2, w2) = items[i], items[i + 1]
                items[i], items[i + 1] = (g1, w2), (g2, w1)
    return b"".join(g + w for g, w in items) + tail
