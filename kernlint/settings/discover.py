"""File discovery: which files a run lints (the directory walk) and which config applies to each file.

As ruff does, every file gets the settings of the config nearest to it (walking up from the file),
and that config's globs (`exclude`, `per-file-ignores`) are matched against the path relative to
the config's directory, so results do not depend on the working directory or on how a path is
spelled. A directory walk skips hidden directories, virtual environments, build outputs and (in a
git work tree) what `.gitignore` ignores; a file named explicitly is always linted unless
`--force-exclude` is given.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# kernlint.settings.config imports the rule catalogue, whose rules import kernlint.engine.suppress, which imports
# kernlint.settings.config: importing the catalogue first keeps that cycle resolvable from any entry point.
import kernlint.checks  # noqa: F401  (import order, see above)
from kernlint.settings.config import Settings, find_config, is_excluded, load_settings, merge_cli, path_matches

if TYPE_CHECKING:
    from kernlint.checks.base import Rule

__all__ = ["LINTABLE_SUFFIXES", "SKIPPED_DIRS", "SettingsResolver", "excluded_by", "gitignored", "path_matches", "walk"]

SKIPPED_DIRS = frozenset({"build", "dist", "node_modules", "__pycache__", "site-packages"})
"""Directory names a walk never enters: build outputs and installed packages."""

LINTABLE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl", ".cpp", ".cc", ".cxx", ".c")
"""Suffixes of files kernlint lints when they are named explicitly; anything else gets a note."""


class SettingsResolver:
    """The settings of each file: its nearest config (or `--config`) with the command line laid over it.

    Configs are loaded once each. Raises ConfigError (from `settings_for`) for a bad config file.
    """

    def __init__(self, rules: Sequence[Rule], overrides: dict[str, Any], config: Path | None = None) -> None:
        self._rules = rules
        self._overrides = overrides
        self._config = config
        self._by_config: dict[Path | None, Settings] = {}
        self._by_dir: dict[str, Path | None] = {}
        self._by_resolved_dir: dict[str, Path | None] = {}  # find_config's memo

    def config_for(self, path: str) -> Path | None:
        """Return the config file that governs `path` (a file or directory; "-" is the working directory)."""
        if self._config is not None:
            return self._config
        start = os.getcwd() if path == "-" else os.path.abspath(path)
        directory = start if os.path.isdir(start) else os.path.dirname(start)
        if directory not in self._by_dir:
            self._by_dir[directory] = find_config(Path(directory), self._by_resolved_dir)
        return self._by_dir[directory]

    def load(self, config: Path | None) -> Settings:
        """Return the settings of `config` (defaults when None) with the command-line values over them."""
        if config not in self._by_config:
            self._by_config[config] = merge_cli(load_settings(config, self._rules), self._rules, **self._overrides)
        return self._by_config[config]

    def settings_for(self, path: str) -> Settings:
        """Return the settings that apply to `path`."""
        return self.load(self.config_for(path))


def is_virtualenv(directory: Path) -> bool:
    """A directory holding `pyvenv.cfg` is a Python virtual environment (PEP 405). A directory that cannot be
    read is not one (`os.path.isfile` says False where `Path.is_file` raises PermissionError): the walk
    then reports it as unreadable, and the run goes on (issue 30)."""
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def _may_be_in_work_tree(directory: Path) -> bool:
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return True
    for d in {os.path.abspath(directory), os.path.realpath(directory)}:  # as spelled, and as git sees it
        while True:
            if os.path.lexists(os.path.join(d, ".git")):
                return True
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return False


def gitignored(directory: Path) -> set[str] | None:
    """Return the absolute paths under `directory` that git ignores (directories end in "/").

    None when git is absent or `directory` is not inside a git work tree: then nothing is ignored.
    (Git finds a work tree by a `.git` in the directory or an ancestor, or by GIT_DIR/GIT_WORK_TREE:
    with none of them, git is not started.)
    """
    if not _may_be_in_work_tree(directory):
        return None
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        return None
    try:
        proc = subprocess.run(
            [git, "-C", str(directory), "ls-files", "--others", "--ignored", "--exclude-standard", "--directory",
             "-z"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    base = os.path.abspath(directory)
    out = set()
    for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if entry:
            full = os.path.normpath(os.path.join(base, entry))
            out.add(full + "/" if entry.endswith("/") else full)
    return out


def walk(root: str, keep_dir: Callable[[str], bool], keep_file: Callable[[str], bool],
         respect_gitignore: bool = True, unreadable: list[tuple[str, str]] | None = None) -> list[str]:
    """Return the files under directory `root` (spelled as `root` is) that `keep_file` accepts, sorted.

    Hidden directories, virtual environments, SKIPPED_DIRS and (with `respect_gitignore`) directories
    and files git ignores are not entered; neither is a directory `keep_dir` refuses. `root` itself
    is always walked: it was named. Directories that cannot be listed are appended to `unreadable`
    as (path, reason) instead of being skipped silently.
    """
    def failed(exc: OSError) -> None:
        if unreadable is not None:
            unreadable.append((str(exc.filename or root), exc.strerror or str(exc)))

    ignored = gitignored(Path(root)) if respect_gitignore else None
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=failed):
        kept = []
        for d in sorted(dirnames):
            full = os.path.join(dirpath, d)
            if d.startswith(".") or d in SKIPPED_DIRS or is_virtualenv(Path(full)):
                continue
            if ignored is not None and os.path.normpath(os.path.abspath(full)) + "/" in ignored:
                continue
            if os.path.islink(full) or not keep_dir(full):
                continue
            kept.append(d)
        dirnames[:] = kept
        for name in filenames:
            full = os.path.join(dirpath, name)
            if ignored is not None and os.path.normpath(os.path.abspath(full)) in ignored:
                continue
            if keep_file(full):
                found.append(str(Path(full)))  # `./k.cu` reads `k.cu`, as the paths were spelled before
    return sorted(found)


def excluded_by(resolver: SettingsResolver) -> Callable[[str], bool]:
    """Return a test: is this path excluded by the config that governs it?"""
    return lambda path: is_excluded(path, resolver.settings_for(path))


def explicit_files(args: Iterable[str]) -> list[str]:
    """The arguments that name files (not directories, not standard input)."""
    return [a for a in args if a != "-" and not os.path.isdir(a)]
