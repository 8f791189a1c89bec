"""Settings: `[tool.kernlint]` in pyproject.toml (or a kernlint.toml), merged with CLI flags.

Rule selectors are shared by config and suppressions, so they live here too. A selector is
a code (`KL101`), a kebab-case name (`shared-bank-conflict`), a code prefix (`KL2`, `KL2xx`,
`KL10x`), or, in config only, `ALL`. When select and ignore both match a rule, the more specific
selector wins (a code or name beats a prefix, a longer prefix beats a shorter one, anything beats
`ALL`); on a tie, ignore wins. So `select = ["KL1"]`, `ignore = ["KL1xx"]` selects nothing, and
`ignore = ["KL1"]` with `select = ["KL101"]` keeps just KL101.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePath, PurePosixPath
from typing import TYPE_CHECKING, Any

from kernlint.base.diagnostics import Severity
from kernlint.base.frozen import frozen
from kernlint.base.lazy_re import lazy_compile

if TYPE_CHECKING:  # a runtime import would close a cycle: checks -> suppress -> config -> checks
    from kernlint.checks.base import Rule



def _toml_module() -> Any:
    """tomllib (tomli before 3.11), imported when a config file is read: most runs read none."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    return tomllib

CONFIG_NAMES = ("kernlint.toml", "pyproject.toml")  # looked for in this order in each directory
FORMATS = ("text", "concise", "json", "sarif", "github")  # kept equal to kernlint.reporters.FORMATS

_CODE = lazy_compile(r"^KL\d{3}$", re.IGNORECASE)
_PREFIX = lazy_compile(r"^(KL\d{0,2})X*$", re.IGNORECASE)
_NAME = lazy_compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
# A define names a parameter, a template parameter or macro, or a field of a struct parameter
# (`data.deviceRank`: the evaluator samples each scalar field of a struct passed by value).
_IDENT = lazy_compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
_ARCH = lazy_compile(r"^(?:sm_|compute_)?(\d{2,3})([af]?)$", re.IGNORECASE)


class ConfigError(Exception):
    """A configuration problem, located as precisely as kernlint can: file, line, message.

    `path` is None for a bad command-line value; `line` is None when the key cannot be found.
    """

    def __init__(self, path: Path | None, line: int | None, message: str) -> None:
        super().__init__(path, line, message)
        self.path = path
        self.line = line
        self.message = message

    def __str__(self) -> str:
        where = "" if self.path is None else f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        return f"{where}{self.message}"


@frozen
class Settings:
    """Resolved settings; the defaults are what kernlint does with no config file and no flags."""

    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    fail_on: Severity = Severity.WARNING
    arch: str | None = None
    block: tuple[int, int, int] | None = None
    define: tuple[tuple[str, int], ...] = ()
    include_dirs: tuple[Path, ...] = ()
    exclude: tuple[str, ...] = ()
    occupancy_threshold: float = 0.5
    # The roofline's peaks instead of the --arch table row: (FP32 TFLOP/s, FP64 TFLOP/s, DRAM GB/s).
    roofline_peak: tuple[float, float, float] | None = None
    format: str = "text"
    # Per file: CPU seconds and worker address space (MiB) before kernlint gives up on it (KL900);
    # 0 turns a limit off. kernlint/system/isolation.py enforces them.
    timeout: float = 20.0
    memory_limit: int = 1024
    # Per file: the analysis's work budget in evaluation steps (kernlint/base/deadline.py); None: from the
    # timeout (half its seconds at deadline.STEPS_PER_SECOND); 0: no budget.
    work_budget: int | None = None
    project: bool = True  # use the project index (launches, includers from other files)
    compile_commands: Path | None = None  # directory holding compile_commands.json
    source: Path | None = None
    # Where `exclude`'s globs are relative to when they came from the command line (the working
    # directory, as ruff resolves command-line paths); None: the config's directory.
    exclude_base: Path | None = None


# ---------------------------------------------------------------------------------------------
# Selectors


def selector_specificity(selector: str) -> int | None:
    """Return how specific `selector` is (ALL 0, prefix 1-3, code or name 4), None if malformed."""
    sel = selector.strip()
    if sel.upper() == "ALL":
        return 0
    if _CODE.match(sel):
        return 4
    prefix = _PREFIX.match(sel)
    if prefix:
        return len(prefix.group(1)) - 1  # "KL" -> 1, "KL2" -> 2, "KL10" -> 3
    if _NAME.match(sel.lower()):
        return 4
    return None


def selector_matches(selector: str, code: str, name: str) -> bool:
    """Return whether `selector` (code, name, prefix or ALL) picks the rule `code`/`name`."""
    sel = selector.strip()
    if sel.upper() == "ALL":
        return True
    if _CODE.match(sel):
        return sel.upper() == code.upper()
    prefix = _PREFIX.match(sel)
    if prefix:
        return code.upper().startswith(prefix.group(1).upper())
    return sel.lower() == name.lower()


def selector_known(selector: str, rules: Sequence[Rule], allow_all: bool = True) -> bool:
    """Return whether `selector` is well formed and picks at least one rule of `rules`."""
    if selector.strip().upper() == "ALL":
        return allow_all
    if selector_specificity(selector) is None:
        return False
    return any(selector_matches(selector, r.code, r.name) for r in rules)


def unknown_selector_message(selector: str, rules: Sequence[Rule]) -> str:
    """Return why `selector` picks no rule, with the closest code or name as a suggestion."""
    import difflib

    sel = selector.strip()
    choices = [r.code for r in rules] + [r.name for r in rules]
    close = difflib.get_close_matches(sel.upper() if _CODE.match(sel) or sel.upper().startswith("KL") else sel.lower(),
                                      choices, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(sel.lower(), [r.name for r in rules], n=1, cutoff=0.5)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{selector!r} matches no rule{hint} (see `kernlint --list-rules`)"


def _best(selectors: Iterable[str], code: str, name: str) -> int | None:
    """Return the specificity of the most specific selector matching the rule, if any does."""
    found = [selector_specificity(s) or 0 for s in selectors if selector_matches(s, code, name)]
    return max(found) if found else None


# ---------------------------------------------------------------------------------------------
# Paths


def _relative_to_base(path: str | PurePath, base: Path) -> str | None:
    """Return `path` relative to `base` (both made absolute; symlinks tried resolved too), or None."""
    import os

    absolute = os.path.abspath(path)
    for p in dict.fromkeys((absolute, os.path.realpath(absolute))):
        for b in dict.fromkeys((os.path.abspath(base), os.path.realpath(base))):
            try:
                rel = PurePath(p).relative_to(b)
            except ValueError:
                continue
            return rel.as_posix()
    return None


def path_matches(path: str | PurePath, pattern: str, base: Path | None = None) -> bool:
    """Return whether `path` matches glob `pattern` (as in per-file-ignores and exclude).

    With `base` (the config file's directory), a path inside `base` is matched relative to it,
    however it is spelled (absolute, relative to the working directory, `./`), as ruff does; other
    paths are matched as given. A pattern without "/" matches a file or directory name anywhere;
    one with "/" matches the whole path; `**/` may match no directory at all; a pattern naming a
    directory matches everything below it.
    """
    pure = PurePath(path)
    rel = _relative_to_base(path, base) if base is not None else None
    if rel is not None:
        candidates = {rel}
    else:
        candidates = {PurePosixPath(*pure.parts).as_posix() if pure.parts else str(path)}
    candidates = {c.removeprefix("./") for c in candidates}
    pat = pattern.strip()
    pat = pat.removeprefix("./")
    patterns = {pat.rstrip("/"), pat.replace("**/", "").rstrip("/")}
    for cand in candidates:
        for p in patterns:
            if "/" not in p and fnmatch.fnmatchcase(PurePosixPath(cand).name, p):
                return True
            if fnmatch.fnmatchcase(cand, p) or cand.startswith(p + "/"):
                return True
            if "/" not in p and any(fnmatch.fnmatchcase(part, p) for part in PurePosixPath(cand).parts[:-1]):
                return True
    return False


def settings_base(settings: Settings) -> Path:
    """The directory that `settings`' globs are relative to: its config's, else the working directory."""
    return settings.source.parent if settings.source else Path.cwd()


def is_excluded(path: str | PurePath, settings: Settings) -> bool:
    """Return whether `path` (a file or directory met while walking the inputs) is excluded.

    Globs from the config file are relative to its directory; globs from `--exclude` to the working
    directory the command was run from.
    """
    if not settings.exclude:
        return False
    base = settings.exclude_base or settings_base(settings)
    return any(path_matches(path, pattern, base) for pattern in settings.exclude)


def is_selected(code: str, name: str, path: str | PurePath, settings: Settings, rules: Sequence[Rule]) -> bool:
    """Return whether rule `code`/`name` applies to file `path` under `settings`.

    `name` may be empty: it is then looked up in `rules`.
    """
    if not name:
        name = next((r.name for r in rules if r.code == code), "")
    chosen = _best(settings.select, code, name)
    if chosen is None:
        return False
    dropped = _best(settings.ignore, code, name)
    if dropped is not None and dropped >= chosen:
        return False
    base = settings_base(settings)
    for pattern, selectors in settings.per_file_ignores:
        if path_matches(path, pattern, base) and _best(selectors, code, name) is not None:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# Value coercion: each takes a TOML (or CLI) value and returns the typed value or raises ValueError.


def _selectors(value: Any) -> tuple[str, ...]:
    items: list[Any] = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else [None]
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"expected a list of rule codes, names or prefixes, got {item!r}")
        for part in item.split(","):
            part = part.strip()
            if part:
                if selector_specificity(part) is None:
                    raise ValueError(f"{part!r} is not a rule code (KL101), prefix (KL1, KL1xx) or name")
                out.append(part)
    return tuple(out)


def _per_file_ignores(value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in value):
        pairs = [(p[0], p[1]) for p in value]
    else:
        raise ValueError('expected a table of glob = [codes], e.g. "tests/*.cu" = ["KL101"]')
    out = []
    for glob, codes in pairs:
        if not isinstance(glob, str) or not glob:
            raise ValueError(f"expected a glob string, got {glob!r}")
        out.append((glob, _selectors(codes)))
    return tuple(out)


def _severity(value: Any) -> Severity:
    if isinstance(value, Severity):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected info, warning or error, got {value!r}")
    return Severity.parse(value)


def _arch(value: Any) -> str:
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    match = _ARCH.match(text.strip()) if isinstance(text, str) else None
    if not match:
        raise ValueError(f"expected a GPU architecture such as sm_80, got {value!r}")
    from kernlint.model.occupancy import ARCHS

    name = f"sm_{match.group(1)}"
    if name not in ARCHS:
        # Occupancy (KL4xx) needs the architecture's limits: an unknown one must not silently turn it off.
        raise ValueError(f"unsupported GPU architecture {value!r}; supported: {', '.join(ARCHS)}")
    return f"{name}{match.group(2).lower()}"


def _block(value: Any) -> tuple[int, int, int]:
    if isinstance(value, str):
        parts: list[Any] = [p for p in re.split(r"[\s,x()\[\]]+", value.strip()) if p]
        try:
            dims = [int(p) for p in parts]
        except ValueError:
            raise ValueError(f"expected a block shape such as [32, 8] or \"32x8\", got {value!r}") from None
    elif isinstance(value, (list, tuple)):
        dims = list(value)
    else:
        dims = [value]
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise ValueError(f"expected 1 to 3 integers such as [32, 8], got {value!r}")
    x, y, z = (list(dims) + [1, 1])[:3]
    # Hardware limits of every architecture kernlint models (sm_70 and newer).
    if min(x, y, z) < 1 or x > 1024 or y > 1024 or z > 64 or x * y * z > 1024:
        raise ValueError(f"block ({x}, {y}, {z}) is not a valid CUDA block (each >= 1, z <= 64, x*y*z <= 1024)")
    return (x, y, z)


# The values a `define` may take: those of some integer type a kernel can hold a size in (long long and
# unsigned long long, the widest C++ integer types CUDA has); beyond them no kernel value can be it.
DEFINE_MIN = -(1 << 63)
DEFINE_MAX = (1 << 64) - 1


def _define(value: Any) -> tuple[tuple[str, int], ...]:
    if isinstance(value, Mapping):
        pairs: list[tuple[Any, Any]] = list(value.items())
    elif isinstance(value, (list, tuple)):
        pairs = []
        for item in value:
            if isinstance(item, str) and "=" in item:
                name, _, text = item.partition("=")
                try:
                    pairs.append((name.strip(), int(text.strip(), 0)))
                except ValueError:
                    raise ValueError(f"{item!r}: the value must be an integer") from None
            elif isinstance(item, (list, tuple)) and len(item) == 2:
                pairs.append((item[0], item[1]))
            else:
                raise ValueError(f"expected NAME=VALUE, got {item!r}")
    else:
        raise ValueError("expected a table such as { width = 1024 }")
    out: dict[str, int] = {}
    for name, number in pairs:
        if not isinstance(name, str) or not _IDENT.match(name):
            raise ValueError(f"{name!r} is not an identifier")
        if not isinstance(number, int) or isinstance(number, bool):
            raise ValueError(f"{name} = {number!r}: the value must be an integer")
        if not DEFINE_MIN <= number <= DEFINE_MAX:
            raise ValueError(f"{name} = {number}: out of the range of every integer type (a 64-bit "
                             f"integer holds {DEFINE_MIN} to {DEFINE_MAX})")
        out[name] = number
    return tuple(out.items())


def _strings(what: str) -> Callable[[Any], tuple[str, ...]]:
    def coerce(value: Any) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(v, (str, PurePath)) for v in items):
            raise ValueError(f"expected a list of {what}, got {value!r}")
        return tuple(str(v) for v in items)

    return coerce


def _threshold(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ValueError(f"expected a fraction in (0, 1], got {value!r}")
    return float(value)


def _roofline_peak(value: Any) -> tuple[float, float, float]:
    if (not isinstance(value, (list, tuple)) or len(value) != 3
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in value)):
        raise ValueError(f"expected [FP32 TFLOP/s, FP64 TFLOP/s, DRAM GB/s], three positive numbers, got {value!r}")
    return (float(value[0]), float(value[1]), float(value[2]))


def _seconds(value: Any) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e6:
        raise ValueError(f"expected a number of seconds (0: no limit), got {value!r}")
    return float(value)


def _mebibytes(value: Any) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not (value == 0 or 256 <= value < 1 << 30):
        raise ValueError(f"expected a whole number of MiB, at least 256 (0: no limit), got {value!r}")
    return value


def _steps(value: Any) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 40:
        raise ValueError(f"expected a whole number of evaluation steps (0: no budget), got {value!r}")
    return value


def _format(value: Any) -> str:
    if value not in FORMATS:
        raise ValueError(f"expected one of {', '.join(FORMATS)}, got {value!r}")
    return str(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _directory(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a directory, got {value!r}")
    return value


# TOML key -> (Settings field, coercion). include-dirs is handled apart: it resolves paths.
_KEYS: Mapping[str, tuple[str, Callable[[Any], Any]]] = {
    "select": ("select", _selectors),
    "ignore": ("ignore", _selectors),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "fail-on": ("fail_on", _severity),
    "arch": ("arch", _arch),
    "block": ("block", _block),
    "define": ("define", _define),
    "include-dirs": ("include_dirs", _strings("directories")),
    "exclude": ("exclude", _strings("globs")),
    "occupancy-threshold": ("occupancy_threshold", _threshold),
    "roofline-peak": ("roofline_peak", _roofline_peak),
    "format": ("format", _format),
    "timeout": ("timeout", _seconds),
    "memory-limit": ("memory_limit", _mebibytes),
    "work-budget": ("work_budget", _steps),
    "project": ("project", _bool),
    "compile-commands": ("compile_commands", _directory),
}
_FIELDS = {field: (key, coerce) for key, (field, coerce) in _KEYS.items()}


# ---------------------------------------------------------------------------------------------
# Finding and loading config files


def _has_kernlint_table(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    tomllib = _toml_module()
    try:
        return "kernlint" in tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        # A file that does not parse might hold the table (`[tool.kernlint` without its bracket is one
        # such error): it is taken as ours, so loading it reports the error with its line (exit status 2)
        # instead of linting with the defaults. ruff treats a broken pyproject.toml on its search the same way.
        return True


def find_config(start: Path, memo: dict[str, Path | None] | None = None) -> Path | None:
    """Return the nearest kernlint.toml, or pyproject.toml with a [tool.kernlint] table.

    The search starts at `start` (a directory, or the directory of a file) and walks up to the
    filesystem root; in one directory kernlint.toml wins over pyproject.toml. `memo` (resolved
    directory -> its answer), shared by the searches of one run, spares walking up again.
    """
    here = os.path.realpath(start)
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    walked: list[str] = []
    found = None
    while True:
        if memo is not None and here in memo:
            found = memo[here]
            break
        walked.append(here)
        candidate = os.path.join(here, "kernlint.toml")
        if os.path.isfile(candidate):
            found = Path(candidate)
            break
        candidate = os.path.join(here, "pyproject.toml")
        if os.path.isfile(candidate) and _has_kernlint_table(Path(candidate)):
            found = Path(candidate)
            break
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    if memo is not None:
        memo.update(dict.fromkeys(walked, found))
    return found


_HEADER = lazy_compile(r"^\s*\[(?!\[)\s*(.+?)\s*\]\s*(?:#.*)?$")
_KEY_TOKEN = r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_-]+'
_KEY_LINE = lazy_compile(rf"^\s*((?:{_KEY_TOKEN})(?:\s*\.\s*(?:{_KEY_TOKEN}))*)\s*=")


def _dotted(text: str) -> tuple[str, ...]:
    return tuple(t.strip("\"'") for t in re.findall(_KEY_TOKEN, text))


def key_line(text: str, table: tuple[str, ...], key: str) -> int | None:
    """Return the 1-based line of `key` in TOML table `table` of `text`, or None.

    tomllib reports no positions, so this re-scans the text for the header and the key (also in
    dotted form, `kernlint.select = ...` under `[tool]`); if only the table is found, its header
    line is returned, which still points the user at the right place.
    """
    target = (*table, key)
    current: tuple[str, ...] = ()
    header_line: int | None = None
    for n, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if stripped.startswith("[["):
            current = ("[[array]]",)
            continue
        header = _HEADER.match(line)
        if header:
            current = _dotted(header.group(1))
            if current == target:  # the key is a sub-table: [tool.kernlint.per-file-ignores]
                return n
            if current == table:
                header_line = n
            continue
        found = _KEY_LINE.match(line)
        if found and (*current, *_dotted(found.group(1))) == target:
            return n
    return header_line


def _table_of(path: Path, data: Mapping[str, Any]) -> tuple[tuple[str, ...], Mapping[str, Any]]:
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, Mapping) or "kernlint" not in tool:
            raise ConfigError(path, None, "no [tool.kernlint] table")
        table = tool["kernlint"]
        if not isinstance(table, Mapping):
            raise ConfigError(path, None, "[tool.kernlint] must be a table")
        return ("tool", "kernlint"), table
    return (), data


def load_settings(path: Path | None, rules: Sequence[Rule] | None = None) -> Settings:
    """Return the settings in config file `path` (defaults when None).

    With `rules`, every selector must also name at least one known rule. Raises ConfigError,
    pointing at the offending line, for unreadable files, TOML syntax errors, unknown keys and
    bad values.
    """
    if path is None:
        return Settings()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, None, f"cannot read config file: {exc}") from None
    tomllib = _toml_module()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib gives the position only inside its message (no lineno attribute before 3.14).
        where = re.search(r"at line (\d+)", str(exc))
        line = int(where.group(1)) if where else None
        if line is None and "end of document" in str(exc):
            line = max(1, len(text.rstrip("\n").split("\n")))
        raise ConfigError(path, line, f"invalid TOML: {exc}") from None
    table_path, table = _table_of(path, data)
    title = "[tool.kernlint]" if table_path else path.name

    values: dict[str, Any] = {}
    for key, value in table.items():
        line = key_line(text, table_path, key)
        if key not in _KEYS:
            import difflib

            close = difflib.get_close_matches(key.replace("_", "-"), list(_KEYS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(_KEYS)}"
            raise ConfigError(path, line, f"unknown key {key!r} in {title}{hint}")
        field, coerce = _KEYS[key]
        if field == "per_file_ignores" and isinstance(value, Mapping):
            # Check entry by entry, so an error points at the glob's own line.
            for glob, codes in value.items():
                try:
                    _per_file_ignores({glob: codes})
                except ValueError as exc:
                    entry_line = key_line(text, (*table_path, key), glob) or line
                    raise ConfigError(path, entry_line, f"{key}: {glob!r}: {exc}") from None
        try:
            values[field] = coerce(value)
        except ValueError as exc:
            raise ConfigError(path, line, f"{key}: {exc}") from None
        if rules is not None and field in ("select", "ignore", "per_file_ignores"):
            _check_known(path, line, key, values[field], rules)
    if "include_dirs" in values:
        # Relative include directories are relative to the config file, not to the cwd.
        values["include_dirs"] = tuple(path.parent / d for d in values["include_dirs"])
    if "compile_commands" in values:
        values["compile_commands"] = path.parent / values["compile_commands"]
    return Settings(**values, source=path)


def _check_known(path: Path, line: int | None, key: str, value: Any, rules: Sequence[Rule]) -> None:
    selectors: Iterable[str] = (
        [s for _, sels in value for s in sels] if key == "per-file-ignores" else value
    )
    for sel in selectors:
        if not selector_known(sel, rules):
            raise ConfigError(path, line, f"{key}: {unknown_selector_message(sel, rules)}")


def merge_cli(settings: Settings, rules: Sequence[Rule] | None = None, **overrides: Any) -> Settings:
    """Return `settings` with command-line values laid over it; None means "flag not given".

    Keys are Settings field names (`select`, `fail_on`, `block`, ...), values are what the CLI
    parsed (strings are accepted and coerced as in the config file). `define` is merged by name,
    the CLI winning; `include_dirs` puts the CLI's directories first; every other field is
    replaced. With `rules`, a selector must pick at least one of them, as in the config file.
    Raises ConfigError (with no path) for a bad value and TypeError for an unknown key.
    """
    changes: dict[str, Any] = {}
    for field, value in overrides.items():
        if field not in _FIELDS:
            raise TypeError(f"merge_cli() got an unknown setting {field!r}")
        if value is None or (field in ("define", "include_dirs") and not value):
            continue
        key, coerce = _FIELDS[field]
        try:
            coerced = coerce(value)
        except ValueError as exc:
            raise ConfigError(None, None, f"--{key}: {exc}") from None
        if rules is not None and field in ("select", "ignore"):
            for sel in coerced:
                if not selector_known(sel, rules, allow_all=True):
                    raise ConfigError(None, None, f"--{key}: {unknown_selector_message(sel, rules)}")
        if field == "define":
            merged = dict(settings.define)
            merged.update(coerced)
            coerced = tuple(merged.items())
        elif field == "include_dirs":
            coerced = tuple(Path(d) for d in coerced) + settings.include_dirs
        changes[field] = coerced
        if field == "exclude":
            changes["exclude_base"] = Path.cwd().resolve()
    return dataclasses.replace(settings, **changes)


# ---------------------------------------------------------------------------------------------
# Showing settings


def _toml(value: Any) -> str:
    import json

    if isinstance(value, Severity):
        return json.dumps(value.label)
    if isinstance(value, (str, PurePath)):
        return json.dumps(str(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, tuple) and value and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in value):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value) + " }"
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))


def resolved_settings_text(settings: Settings) -> str:
    """Return the settings as a `[tool.kernlint]` TOML table, for `--show-settings`.

    The output can be pasted into pyproject.toml; unset optional values appear as comments.
    """
    origin = f"from {settings.source}" if settings.source else "defaults: no config file found"
    lines = [f"# kernlint settings ({origin})", "[tool.kernlint]"]
    for key, (field, _) in _KEYS.items():
        value = getattr(settings, field)
        if value is None:
            lines.append(f"# {key} is not set")
        elif field == "per_file_ignores" and not value or field == "define" and not value:
            lines.append(f"{key} = {{}}")
        else:
            lines.append(f"{key} = {_toml(value)}")
    return "\n".join(lines) + "\n"
