"""Integer folding of C expression text (template arguments, block sizes, macros) for the project index."""
from __future__ import annotations

import functools
import re
from typing import Mapping

from kernlint.ir import intfold


_TOKEN = (r"0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*|<<|>>|\S")
_CAST = (r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:int|long|long\s+long|short|size_t|unsigned|"
         r"u?int\d+_t)\s*\)")
_STATIC_CAST = (r"static_cast\s*<[^<>]*>\s*\(")
_SIZEOF = {"char": 1, "signed char": 1, "unsigned char": 1, "short": 2, "unsigned short": 2, "int": 4,
           "unsigned": 4, "unsigned int": 4, "float": 4, "long": 8, "long long": 8, "double": 8, "size_t": 8,
           "half": 2, "__half": 2, "__nv_bfloat16": 2, "float2": 8, "float4": 16, "int2": 8, "int4": 16,
           "double2": 16}
_SIZEOF_RE = r"sizeof\s*\(\s*([A-Za-z_][\w\s]*?)\s*\)"
_OPS = {"+", "-", "*", "/", "%", "(", ")", "<<", ">>", "&", "|", "^", "~"}


@functools.cache
def _rx() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The patterns, compiled on first use (a warm run that folds nothing never pays for them)."""
    return (re.compile(_TOKEN), re.compile(_CAST), re.compile(_STATIC_CAST), re.compile(_SIZEOF_RE))


def fold(text: str, env: Mapping[str, str | int], depth: int = 0) -> int | None:
    """The integer value of `text`, with names looked up in `env` (texts folded recursively)."""
    if depth > 12 or not text or len(text) > 400:
        return None
    token_rx, cast_rx, static_cast_rx, sizeof_rx = _rx()
    t = static_cast_rx.sub("(", text)
    t = cast_rx.sub("", t)
    t = sizeof_rx.sub(lambda m: str(_SIZEOF.get(" ".join(m.group(1).split()), "sizeof")), t)
    parts: list[str | int] = []
    for tok in token_rx.findall(t):
        if tok[0].isdigit():
            parts.append(tok)
        elif tok[0].isalpha() or tok[0] == "_":
            name = "".join(tok.split())
            if name in ("true", "false"):
                parts.append("1" if name == "true" else "0")
                continue
            value = env.get(name)
            if value is None and "::" in name:
                value = env.get(name.rsplit("::", 1)[1])
            if value is None:
                return None
            v = value if isinstance(value, int) else fold(value, {k: x for k, x in env.items() if k != name},
                                                           depth + 1)
            if v is None:
                return None
            parts.append(v)
        elif tok in _OPS:
            parts.append(tok)
        else:
            return None
    if not parts:
        return None
    value = intfold.evaluate(parts)  # bounded: no eval, 64-bit cap, depth cap
    return value if value is not None and abs(value) < 1 << 62 else None
