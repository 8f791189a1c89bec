"""Linting an editor buffer as the CLI lints a file: its config, project index, compile_commands.json and result cache.

The buffer's unsaved text is what is linted. Settings are the file's nearest config with the
client's settings laid over it, as the command line's flags are (`config.merge_cli`). Each lint
runs in this process, so the parsed headers, the project index and the lowered IR stay warm
between edits; an outcome is reused from the result cache while the text and everything it
depended on are unchanged (`kernlint.runner.resultcache`). No pygls here: the protocol lives in
`kernlint.server.protocol`.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from kernlint.base.diagnostics import Diagnostic
from kernlint.base.frozen import frozen

CLIENT_KEYS = ("select", "ignore", "arch", "block", "defines")
"""The settings a client may send (under `kernlint` in `workspace/didChangeConfiguration`, or as
`initializationOptions`): each overrides the config file's value, as the flag of the same name does."""


class SettingsProblem(ValueError):
    """A client setting that cannot be used (the message names it)."""


def client_overrides(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `merge_cli` overrides of the client's settings `raw` (keys of CLIENT_KEYS; others are ignored).

    `select`/`ignore`: a list or a comma-separated string; `block`: "32,8" or [32, 8]; `defines`: a
    mapping {"N": 4096} or a list of "N=4096". Raises SettingsProblem for a value of the wrong shape.
    """
    from kernlint.settings.config import ConfigError, merge_cli

    raw = raw or {}
    out: dict[str, Any] = {}
    for key in ("select", "ignore"):
        value = raw.get(key)
        if value is None or value == "" or value == []:
            continue
        if isinstance(value, str):
            value = [s.strip() for s in value.split(",") if s.strip()]
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise SettingsProblem(f"kernlint.{key}: expected a list of codes, names or prefixes, got {value!r}")
        out[key] = value
    arch = raw.get("arch")
    if arch:
        if not isinstance(arch, str):
            raise SettingsProblem(f"kernlint.arch: expected a string like 'sm_80', got {arch!r}")
        out["arch"] = arch
    block = raw.get("block")
    if block:
        if isinstance(block, (list, tuple)):
            block = ",".join(str(b) for b in block)
        from kernlint.settings.flags import _parse_block  # the flag's own parser: the same shapes, the same checks

        try:
            out["block"] = _parse_block(str(block))
        except Exception as exc:  # click.BadParameter
            raise SettingsProblem(f"kernlint.block: {getattr(exc, 'message', exc)}") from None
    defines = raw.get("defines")
    if defines:
        if isinstance(defines, Mapping):
            items = [f"{k}={v}" for k, v in defines.items()]
        elif isinstance(defines, (list, tuple)) and all(isinstance(d, str) for d in defines):
            items = list(defines)
        else:
            raise SettingsProblem(f"kernlint.defines: expected {{\"NAME\": VALUE}} or [\"NAME=VALUE\"], got {defines!r}")
        from kernlint.settings.flags import _parse_defines

        try:
            out["define"] = _parse_defines(tuple(items))
        except Exception as exc:  # click.BadParameter
            raise SettingsProblem(f"kernlint.defines: {getattr(exc, 'message', exc)}") from None
    from kernlint.checks.rule_table import RULES

    try:
        merge_cli(_defaults(), RULES, **out)  # reject unknown selectors and bad values now, once
    except ConfigError as exc:
        text = str(exc)
        for flag, key in (("select", "select"), ("ignore", "ignore"), ("arch", "arch"), ("block", "block"),
                          ("define", "defines")):
            text = text.replace(f"--{flag}:", f"kernlint.{key}:")
        raise SettingsProblem(text) from None
    return out


def _defaults() -> Any:
    from kernlint.settings.config import Settings

    return Settings()


@frozen
class BufferLint:
    """One lint of a buffer: its findings (one per site, sorted), the grouped findings (`--fix` proves
    those), input problems as (line, message), the text linted, and the evaluations when kept."""

    path: str
    text: str
    diagnostics: tuple[Diagnostic, ...] = ()
    grouped: tuple[Diagnostic, ...] = ()
    problems: tuple[tuple[int, str], ...] = ()
    notes: tuple[str, ...] = ()
    cached: bool = False
    exact: bool = True  # register counts from ptxas (when nvcc is on PATH), as the CLI; else estimated
    result: Any = dataclasses.field(default=None, compare=False)


class BufferLinter:
    """Lints buffers with the client's settings over each file's config; keeps the result cache open."""

    def __init__(self, cache_dir: str | None = None, use_cache: bool = True) -> None:
        from kernlint.runner.resultcache import ResultCache, cache_root

        self.overrides: dict[str, Any] = {}
        root = cache_root(cache_dir) if use_cache else None
        self.cache = ResultCache(root) if root is not None else None

    def forget_disk_state(self) -> None:
        """Forget what this process memoised about files on disk (the project indexes, the parses of
        template instances through their headers, the lints of reached files): a file other than the buffer changed. The result
        cache needs nothing: each lookup checks what its entry depended on."""
        from kernlint.project import index, units
        from kernlint.runner import reached_lints

        index._INDEXES.clear()  # "built once per run": a server's run lasts while files change
        units._INSTANCES.clear()
        reached_lints.clear()

    def configure(self, raw: Mapping[str, Any] | None) -> None:
        """Take the client's settings; raises SettingsProblem (the previous settings stay)."""
        self.overrides = client_overrides(raw)

    def _job(self, path: str, data: bytes, exact: bool = True) -> tuple[Any, Any]:
        """The FileJob and LintSetup of `path` as the CLI builds them (raises ConfigError for a bad config)."""
        from kernlint.settings.discover import SettingsResolver
        from kernlint.base.options import LintOptions
        from kernlint.runner.parallel import FileJob, LintSetup
        from kernlint.checks.rule_table import RULES

        # A resolver per lint: a config edited on disk counts at the next keystroke (its parse is cheap).
        s = SettingsResolver(RULES, self.overrides).settings_for(path)
        client_block = "block" in self.overrides
        options = LintOptions(block=s.block if client_block else None, config_block=None if client_block else s.block,
                              defines=s.define, include_dirs=tuple(str(d) for d in s.include_dirs),
                              arch=s.arch, occupancy_threshold=s.occupancy_threshold, resources=exact)
        job = FileJob(path, path, data=data, settings=s, options=options,
                      build_dir=str(s.compile_commands) if s.compile_commands else None, no_project=not s.project)
        from kernlint.base import deadline

        setup = LintSetup(arch=s.arch, roofline_peak=s.roofline_peak,
                          work_budget=(deadline.steps_for(s.timeout) if s.work_budget is None
                                       else s.work_budget or None),
                          scan_limit_s=s.timeout / 2 if s.timeout else None)
        return job, setup

    def lint(self, path: str, text: str, keep_results: bool = False, exact: bool = True) -> BufferLint:
        """Lint `text` as the contents of `path`; never raises.

        `exact=False` leaves out ptxas (an nvcc compile of the file, a second or more): register counts
        for KL401/KL403 are then estimated and KL402 is not checked, as with `--no-ptxas`. The server
        lints that way while the user types, and exactly on open and save."""
        from kernlint.checks.grouping import expand
        from kernlint.settings.config import ConfigError
        from kernlint.runner.parallel import lint_file
        from kernlint.runner.resultcache import _index_for, job_key

        data = text.encode("utf-8", "surrogatepass")
        try:
            job, setup = self._job(path, data, exact)
        except ConfigError as exc:
            # The config's line is not this file's: the problem goes on the file's first line, naming it.
            return BufferLint(path, text, problems=((1, f"{exc} (the file was not linted)"),), exact=exact)
        outcome, cached = None, False
        key = None
        if self.cache is not None and not keep_results:
            # The cache remembers each dependency's state for a run; a server's run is long, and a header
            # saved meanwhile must be hashed again.
            self.cache._states.clear()
            key = job_key(job, setup, data)
            outcome = self.cache.lookup(key, lambda: _index_for(job, setup))
            cached = outcome is not None
        # Only exact lints (the server's on open and save) are stored: the texts of half-typed edits
        # would fill the cache with entries that are never asked for again.
        store = key is not None and exact
        if outcome is None:
            run = dataclasses.replace(setup, keep_results=keep_results, record=store)
            outcome = lint_file(job, run)
            if store and key is not None and self.cache is not None:
                self.cache.store(key, outcome)
                self.cache.prune()
                self.cache.wrote = 0  # pruned for what was written so far: the next store prunes again
        own = [d for d in outcome.diagnostics if _same_file(d.path, path)]
        per_site = sorted(expand(own), key=Diagnostic.sort_key)
        problems = tuple((line, message) for p, message, line in outcome.problems if _same_file(p, path))
        return BufferLint(path, text, tuple(per_site), tuple(own), problems, tuple(outcome.notes), cached,
                          exact, outcome.result)

    def fix_all(self, path: str, text: str, grouped: Sequence[Diagnostic], exact: bool = True) -> tuple[str, int]:
        """The text with every edit that re-linting proves (kernlint.engine.fix), and how many findings it fixes."""
        from kernlint.engine.fix import fix_file
        from kernlint.runner.parallel import lint_file

        if not any(d.fixes for d in grouped):
            return text, 0
        try:
            job, setup = self._job(path, text.encode("utf-8", "surrogatepass"), exact)
        except Exception:  # noqa: BLE001 - a bad config: nothing is proven
            return text, 0

        def relint(new: str) -> list[Diagnostic]:
            out = lint_file(dataclasses.replace(job, data=new.encode("utf-8", "surrogatepass")), setup)
            return [d for d in out.diagnostics if _same_file(d.path, path)]

        outcome = fix_file(path, text, grouped, relint)
        return outcome.text, len(outcome.fixed)


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.abspath(a) == os.path.abspath(b)
