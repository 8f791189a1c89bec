"""The values of `--block` and `--define` as a flag or an editor's setting spells them, checked the same way
for both (a click.BadParameter names the flag)."""
from __future__ import annotations

import click


def _parse_block(value: str | None) -> tuple[int, int, int] | None:
    if value is None:
        return None
    import re

    text = value.strip().strip("()[]").strip()
    parts = re.split(r"\s*[,x]\s*|\s+", text) if text else []
    # Every part must be a number: `33,x` or `32,,8` is a typo, not (33, 1, 1).
    if not parts or not all(p.isdigit() for p in parts):
        raise click.BadParameter(f"expected up to three positive integers like 32,8 — got {value!r}", param_hint="--block")
    dims = [int(p) for p in parts]
    if not 1 <= len(dims) <= 3 or any(d <= 0 for d in dims):
        raise click.BadParameter(f"expected up to three positive integers like 32,8 — got {value!r}", param_hint="--block")
    dims += [1] * (3 - len(dims))
    from kernlint.project.launch import valid_block

    shape = (dims[0], dims[1], dims[2])
    if not valid_block(shape):
        raise click.BadParameter(f"a block has at most 1024 threads (and z at most 64) — got {value!r}")
    return shape


def _parse_defines(values: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    out = []
    for v in values:
        name, sep, num = v.partition("=")
        if not sep or not all(part.isidentifier() for part in name.strip().split(".")):  # `p.field` too
            raise click.BadParameter(f"expected NAME=VALUE, got {v!r}", param_hint="--define")
        try:
            value = int(num.strip(), 0)
        except ValueError:
            raise click.BadParameter(f"{name}: value must be an integer, got {num!r}", param_hint="--define") from None
        from kernlint.settings.config import DEFINE_MAX, DEFINE_MIN

        if not DEFINE_MIN <= value <= DEFINE_MAX:
            raise click.BadParameter(f"{name}: {value} is out of the range of every integer type (a 64-bit integer "
                                     f"holds {DEFINE_MIN} to {DEFINE_MAX})", param_hint="--define")
        out.append((name.strip(), value))
    return tuple(out)
