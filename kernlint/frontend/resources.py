"""Per-kernel resource usage: registers, spills, stack and shared memory, from ptxas when we can.

With ``nvcc`` on ``PATH``, :func:`exact_resources` compiles the file for the target architecture
(``nvcc -cubin -arch=sm_XX -Xptxas -v``) and reads what ptxas reports for every kernel entry,
template instantiations included.  Those figures are **exact** for that toolkit version, arch and
flags.  Without a compiler (or when compilation fails or takes too long) it returns no data and a
note saying why; the evaluator then falls back to an estimate from the IR, labelled ``estimated``
(:func:`estimate_registers` is the small heuristic it uses).  This module never raises for a
missing or failing compiler: exact numbers are an improvement, not a requirement.

Results are cached on disk in kernlint's cache directory (``--cache-dir``, ``$KERNLINT_CACHE_DIR``,
``$XDG_CACHE_HOME/kernlint`` or ``~/.cache/kernlint``: :func:`cache_dir`),
keyed by the sha256 of the file text, arch, flags and ``nvcc --version``, so a second run of an
unchanged file costs nothing.  Headers the file includes are not part of the key: editing a header
without touching the ``.cu`` needs ``KERNLINT_NO_CACHE=1`` (or a cache clear) to be seen.
"""
from __future__ import annotations

import functools
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kernlint.base.lazy_re import lazy_compile
from kernlint.system import leftovers
from kernlint.ir.demangle import demangle_kernels
from kernlint.base.frozen import frozen
from kernlint.ir.includes import scan_includes
from kernlint.ir.known_headers import stub_text

COMPILE_TIMEOUT_S = 60.0
"""Cap on one nvcc run: heavy template code can take long, and a linter must not hang."""

CACHE_FORMAT = 3  # bump when the cached JSON layout or the parse changes

BASE_REGISTERS = 8
"""Registers ptxas gives the smallest kernel that indexes a pointer (``p[threadIdx.x] = 1`` uses 8
on sm_80 and sm_90 with CUDA 13): thread index, a 64-bit address, and scratch."""


@frozen
class KernelResources:
    """What one kernel entry (one template instantiation) uses per thread and per block.

    ``source`` is ``exact`` when ptxas reported the numbers and ``estimated`` when they came from
    the IR heuristic; an estimate must never be presented as exact.
    """

    kernel: str
    """Plain (unqualified) name, without template arguments: ``tk`` for ``ns::tk<float, 16>``."""
    registers: int
    spill_stores: int
    """Bytes of spill stores per thread (ptxas ``bytes spill stores``)."""
    spill_loads: int
    stack_bytes: int
    """Per-thread stack frame (local arrays, spills, calls), in bytes."""
    static_shared_bytes: int
    source: str
    note: str = ""
    mangled: str = ""
    qualified_name: str = ""
    """Namespace-qualified name, e.g. ``ns::tk``."""
    template_args: str = ""
    """Template arguments as written by the demangler, e.g. ``float, 16``; empty if none."""
    constant_bytes: int = 0
    """Constant-bank bytes ptxas reports (all ``cmem[n]`` banks; bank 0 holds the parameters)."""
    barriers: int = 0
    arch: str = ""

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0

    @property
    def display_name(self) -> str:
        """``tk<float, 16>`` for an instantiation, else the plain name."""
        return f"{self.kernel}<{self.template_args}>" if self.template_args else self.kernel


def estimate_registers(live_values: int, unrolled: int, local_array_words: int) -> int:
    """Estimate registers per thread when no compiler is available (a heuristic, ±30 % at best).

    ``live_values`` is the peak count of 32-bit scalars live at once in the kernel body (a
    ``double`` or pointer counts 2, a ``float4`` 4).  ``unrolled`` is the count of extra values
    kept in flight by unrolled loops (for a loop unrolled ``u`` times that keeps ``k`` loads or
    accumulators per iteration: ``(u - 1) * k``).  ``local_array_words`` is the size in 32-bit
    words of per-thread arrays indexed only by compile-time constants, which ptxas promotes to
    registers (dynamically indexed arrays stay in local memory and cost no registers).

    The sum is added to ``BASE_REGISTERS`` and capped at 255, the per-thread maximum; beyond that
    ptxas spills, which the estimate cannot predict.
    """
    if min(live_values, unrolled, local_array_words) < 0:
        raise ValueError("register estimate inputs must not be negative")
    return min(255, BASE_REGISTERS + live_values + unrolled + local_array_words)


# --------------------------------------------------------------------------------------------
# ptxas output parsing


_ENTRY = lazy_compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPERTIES = lazy_compile(r"Function properties for (\S+)")
_FRAME = lazy_compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_USED = lazy_compile(r"Used (\d+) registers")
_BARRIERS = lazy_compile(r"used (\d+) barriers")
_SMEM = lazy_compile(r"(\d+) bytes smem")
_CMEM = lazy_compile(r"(\d+) bytes cmem\[\d+\]")


@frozen
class _RawEntry:
    mangled: str
    arch: str
    registers: int
    barriers: int
    shared: int
    constant: int


def parse_ptxas_output(text: str) -> list[dict[str, Any]]:
    """Parse ``-Xptxas -v`` output into one record per kernel entry (mangled names, in order).

    ptxas prints, per entry: ``Compiling entry function 'NAME'``, then ``Function properties for
    NAME`` followed by the stack/spill line, then ``Used N registers, ...``.  Non-entry device
    functions get their own "Function properties" block, which is kept apart by name.
    """
    frames: dict[str, tuple[int, int, int]] = {}
    entries: list[_RawEntry] = []
    current: tuple[str, str] | None = None
    properties_for: str | None = None
    for line in text.splitlines():
        if match := _ENTRY.search(line):
            current = (match.group(1), match.group(2))
            continue
        if match := _PROPERTIES.search(line):
            properties_for = match.group(1)
            continue
        if (match := _FRAME.search(line)) and properties_for is not None:
            frames[properties_for] = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
            properties_for = None
            continue
        if (match := _USED.search(line)) and current is not None:
            barriers = _BARRIERS.search(line)
            smem = _SMEM.search(line)
            entries.append(
                _RawEntry(
                    mangled=current[0],
                    arch=current[1],
                    registers=int(match.group(1)),
                    barriers=int(barriers.group(1)) if barriers else 0,
                    shared=int(smem.group(1)) if smem else 0,
                    constant=sum(int(m) for m in _CMEM.findall(line)),
                )
            )
            current = None
    records = []
    for entry in entries:
        stack, stores, loads = frames.get(entry.mangled, (0, 0, 0))
        records.append(
            {
                "mangled": entry.mangled,
                "arch": entry.arch,
                "registers": entry.registers,
                "barriers": entry.barriers,
                "static_shared_bytes": entry.shared,
                "constant_bytes": entry.constant,
                "stack_bytes": stack,
                "spill_stores": stores,
                "spill_loads": loads,
            }
        )
    return records


# --------------------------------------------------------------------------------------------
# Compilation and cache


def cache_dir() -> Path:
    """Where ptxas figures are cached: the directory every kernlint cache uses
    (`kernlint.project.cache.cache_location`: ``--cache-dir``, ``$KERNLINT_CACHE_DIR``,
    ``$XDG_CACHE_HOME/kernlint``, ``~/.cache/kernlint``)."""
    from kernlint.system.cachedir import cache_location

    return cache_location()


def _caching() -> bool:
    """Whether caches are read and written (``--no-cache`` / ``KERNLINT_NO_CACHE``: not), as every cache decides."""
    from kernlint.system.cachedir import cache_dir as enabled

    return enabled() is not None


# The fields of a cached ptxas record and what each must hold; an entry that breaks this is ignored
# (compiled again and rewritten): `"registers": "many"`, `null` or `-5` must never reach the rules.
_COUNTS = ("registers", "barriers", "static_shared_bytes", "constant_bytes", "stack_bytes", "spill_stores",
           "spill_loads")
_NAMES = ("mangled", "arch", "kernel", "qualified_name", "template_args")
CACHE_ENTRY_MAX_BYTES = 16 << 20


def _valid_record(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    for k in _COUNTS:
        v = record.get(k)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 1 << 31:
            return False
    if any(not isinstance(record.get(k), str) for k in _NAMES):
        return False
    return record["registers"] <= 65536 and bool(record["kernel"])


def valid_cache_entry(data: Any) -> bool:
    """Whether `data` is a well-formed cache entry of this format: kernels with counts that are
    non-negative integers and names that are strings, and a note that is a string or null."""
    return (isinstance(data, dict) and data.get("format") == CACHE_FORMAT
            and isinstance(data.get("kernels"), list) and all(_valid_record(r) for r in data["kernels"])
            and (data.get("note") is None or isinstance(data.get("note"), str)))


def _read_cache(key: str) -> dict[str, Any] | None:
    """The entry for `key`, or None when there is none or it is not a valid one: only a regular
    file is read (a FIFO or a link to /dev/zero in its place must not hang or fill memory), at most
    CACHE_ENTRY_MAX_BYTES of it."""
    if not _caching():
        return None
    from kernlint.base.inputs import ReadProblem, read_regular

    from kernlint.system.cacheentry import unseal

    try:
        payload = unseal(key, read_regular(cache_dir() / f"resources-{key}.json", CACHE_ENTRY_MAX_BYTES))
        if payload is None:
            return None  # damaged, or another key's: a miss, rewritten
        data = json.loads(payload)
    except (ReadProblem, OSError, ValueError, RecursionError):
        return None
    return data if valid_cache_entry(data) else None


def _write_cache(key: str, data: dict[str, Any]) -> None:
    """Store a result; any failure (read-only dir, full disk) just means no cache (said once, as every
    cache write: `leftovers.atomic_write`, which also leaves no temporary file behind)."""
    if not _caching():
        return
    from kernlint.system.cacheentry import seal

    try:
        payload = seal(key, json.dumps(data).encode("utf-8"))
    except (TypeError, ValueError):
        return
    leftovers.atomic_write(cache_dir() / f"resources-{key}.json", payload)


@functools.lru_cache(maxsize=8)
def _nvcc_version_cached(exe: str, mtime_ns: int) -> str | None:
    del mtime_ns  # part of the cache key only: a reinstalled nvcc is asked again
    try:
        done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def nvcc_version(exe: str) -> str | None:
    """``nvcc --version`` text (memoized per process), or None if it does not run."""
    try:
        mtime = os.stat(exe).st_mtime_ns
    except OSError:
        return None
    return _nvcc_version_cached(exe, mtime)


def _normalize_arch(arch: str) -> str:
    text = arch.strip().lower()
    if re.fullmatch(r"\d+", text):
        return f"sm_{text}"
    if re.fullmatch(r"\d\.\d", text):
        return f"sm_{text.replace('.', '')}"
    if text.startswith("compute_"):
        return "sm_" + text[len("compute_") :]
    return text


def _run(argv: list[str], cwd: str, timeout: float, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run a command in its own process group (with `env` added to the environment); on timeout kill
    that group (nvcc's children too)."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, env={**os.environ, **env} if env else None)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        proc.communicate()
        raise
    return proc.returncode, out


def _first_error(output: str) -> str:
    for line in output.splitlines():
        if "error" in line.lower() or "fatal" in line.lower():
            return line.strip()[:300]
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[0][:300] if lines else "no output"


def _with_names(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add demangled ``kernel``/``qualified_name``/``template_args`` to parsed ptxas records."""
    names = demangle_kernels([record["mangled"] for record in records])
    out = []
    for record in records:
        plain, qualified, args = names[record["mangled"]]
        out.append({**record, "kernel": plain, "qualified_name": qualified, "template_args": args})
    return out


def _to_resources(records: list[dict[str, Any]]) -> dict[str, list[KernelResources]]:
    out: dict[str, list[KernelResources]] = {}
    for record in records:
        out.setdefault(record["kernel"], []).append(
            KernelResources(
                kernel=record["kernel"],
                registers=record["registers"],
                spill_stores=record["spill_stores"],
                spill_loads=record["spill_loads"],
                stack_bytes=record["stack_bytes"],
                static_shared_bytes=record["static_shared_bytes"],
                source="exact",
                note=f"ptxas, {record['arch']}",
                mangled=record["mangled"],
                qualified_name=record["qualified_name"],
                template_args=record["template_args"],
                constant_bytes=record["constant_bytes"],
                barriers=record["barriers"],
                arch=record["arch"],
            )
        )
    return out


def exact_resources(
    source_text: str,
    path: str,
    arch: str,
    include_dirs: Sequence[str] = (),
    defines: Sequence[str] = (),
    *,
    timeout: float = COMPILE_TIMEOUT_S,
) -> tuple[dict[str, list[KernelResources]], str | None]:
    """Compile ``source_text`` with nvcc for ``arch`` and return ptxas's figures per kernel.

    Returns ``(kernels, note)``: ``kernels`` maps each kernel's plain name to one
    :class:`KernelResources` per compiled entry (one per template instantiation), and ``note`` is
    ``None`` on success or a human-readable reason why no exact data is available (no nvcc,
    compile error, timeout).  ``path`` is the file's name on disk: its directory is put on the
    include path so ``#include "local.h"`` resolves, though the text compiled is ``source_text``.
    ``defines`` are ``NAME`` or ``NAME=VALUE``.  Never raises for compiler trouble.
    """
    exe = shutil.which("nvcc")
    if exe is None:
        return {}, "nvcc not found on PATH: registers are estimated, not exact (install the CUDA toolkit for ptxas figures)"
    version = nvcc_version(exe)
    if version is None:
        return {}, f"{exe} --version failed: registers are estimated, not exact"
    target = _normalize_arch(arch)
    file_dir = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
    # nvcc runs in a temporary directory: every include directory must be absolute.
    include_dirs = [os.path.abspath(d) for d in include_dirs]
    flags = [
        "-cubin", f"-arch={target}", "-Xptxas", "-v", "-x", "cu",
        # Permissive language options that real projects commonly build with; they only make
        # more files compile.
        "--expt-relaxed-constexpr", "--extended-lambda",
        f"-I{file_dir}",
        *(f"-I{d}" for d in include_dirs),
        *(f"-D{d}" for d in defines),
    ]
    key_material = json.dumps([CACHE_FORMAT, source_text, target, flags, version])
    key = hashlib.sha256(key_material.encode("utf-8", "surrogatepass")).hexdigest()
    cached = _read_cache(key)  # None for a damaged entry too: compiled again and overwritten
    if cached is not None:
        return _to_resources(cached["kernels"]), cached.get("note")

    name = Path(path).name if path else "kernel.cu"
    unresolved = scan_includes(source_text, path or name, (file_dir, *include_dirs))
    odd = sorted(p for p in unresolved.paths if os.path.exists(p))
    if odd:
        return {}, f"{name} includes {odd[0]}, which is not a regular file: not compiled; registers are estimated"
    stubbed: set[str] = set()
    deadline = time.monotonic() + timeout
    try:
        # Named by this process, so that if it is killed mid-compile its parent removes the directory.
        with tempfile.TemporaryDirectory(prefix=leftovers.nvcc_dir_prefix()) as tmp:
            # nvcc's own temporary files (tmpxft_*) go in here too, not in /tmp, where nvcc killed at
            # the timeout would leave them: nvcc puts them in $TMPDIR.
            nvcc_tmp = Path(tmp) / "tmp"
            nvcc_tmp.mkdir()
            source = Path(tmp) / (name if name.endswith(".cu") else name + ".cu")
            # Nested, so that stubs for `../x.h` (up to four levels up) still land inside `stubs`.
            stub_dir = Path(tmp) / "stubs" / "s" / "s" / "s" / "s"
            stub_dir.mkdir(parents=True)
            # Headers that are on no include path are empty files, searched after the system
            # directories (`-idirafter`), so a stub never hides a real header.
            argv = [exe, *flags, "-Xcompiler", "-idirafter", "-Xcompiler", str(stub_dir),
                    "-o", str(Path(tmp) / "out.cubin"), str(source)]

            def compile_text(text: str, extra: list[str]) -> tuple[int, str]:
                source.write_text(text, encoding="utf-8", errors="surrogateescape")
                pending = set(unresolved.names)
                for _round in range(NVCC_STUB_ROUNDS):
                    stubbed.update(n for n in pending if _write_stub(stub_dir, Path(tmp) / "stubs", n))
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise subprocess.TimeoutExpired(argv, timeout)
                    code, out = _run(argv[:1] + extra + argv[1:], tmp, left, {"TMPDIR": str(nvcc_tmp)})
                    if code == 0:
                        break
                    pending = set(_missing_headers(out)) - stubbed
                    if not pending:
                        break
                return code, out

            returncode, output = compile_text(source_text, [])
            extra: list[str] = []
            if returncode != 0 and "requires separate compilation mode" in output:
                # Dynamic parallelism (a kernel launching a kernel) compiles only as relocatable code.
                extra = ["-rdc=true"]
                returncode, output = compile_text(source_text, extra)
            if returncode != 0:
                # Host code nvcc rejects (an API removed from this toolkit, a host type from a
                # missing header) does not change device code: compile the device code alone.
                # Template kernels launched only from host code then have no instantiation.
                # Then the same for the project headers it includes (inlined, host code left out).
                device = _device_only(source_text)
                tries = [device] if device is not None and device != source_text else []
                if device is not None:
                    inlined = _inline_headers(device, file_dir, tuple(include_dirs), path or name)
                    if inlined is not None and inlined != device:
                        tries.append(inlined)
                for text in tries:
                    code, out = compile_text(text, extra)
                    if code == 0:
                        returncode, output = code, out
                        break
            # Messages should name the user's file, not our temporary copy.
            output = output.replace(str(source), path or name)
    except subprocess.TimeoutExpired:
        # Not cached: a timeout may be load on the machine rather than the file.
        _transient()
        return {}, f"nvcc timed out after {timeout:g} s for {target}: registers are estimated, not exact"
    except OSError as error:
        _transient()
        return {}, f"could not run nvcc ({error}): registers are estimated, not exact"
    if returncode != 0:
        missing = _missing_headers(output)
        why = (f"missing header {missing[0]}" if missing else _first_error(output))
        shown = sorted(n for n in stubbed if not _system_header(n))
        if shown and not missing:
            why += f"; headers not found and compiled as empty files: {', '.join(shown[:5])}"
        failure = (f"nvcc could not compile {name} for {target} ({why}): "
                   "registers are estimated, not exact")
        if _compile_error(returncode, output):
            _write_cache(key, {"format": CACHE_FORMAT, "kernels": [], "note": failure})
        else:
            _transient()  # the machine, not the source: neither cache may keep this
        return {}, failure
    # Demangle before caching, so a cached run starts no process at all.
    records = _with_names(parse_ptxas_output(output))
    note: str | None = None if records else f"nvcc compiled {name} for {target} but reported no kernel entries"
    _write_cache(key, {"format": CACHE_FORMAT, "kernels": records, "note": note})
    return _to_resources(records), note


# What nvcc (or cicc, ptxas, the host compiler under it) says when the machine, not the source, made it
# fail: a file-size or memory limit, a full disk, a signal. Such a failure is never cached.
_ENVIRONMENT = lazy_compile(
    r"file size limit|no space left|disk quota|cannot allocate memory|out of memory|bad_alloc|"
    r"resource temporarily unavailable|too many open files|read-only file system|permission denied|"
    r"killed|signal|core dumped|segmentation fault|internal compiler error|terminate called",
    re.IGNORECASE)


def _compile_error(returncode: int, output: str) -> bool:
    """Whether a failed compile failed because of the source (worth caching): nvcc exited normally
    (not killed by a signal, not 128 + a signal from a wrapper) and reported an error, and nothing in
    its output points at the environment."""
    return (0 < returncode < 128 and re.search(r"\berror\b", output, re.IGNORECASE) is not None
            and _ENVIRONMENT.search(output) is None)


TRANSIENT_FAILURES = 0
"""nvcc runs that failed in a way that may not happen again (timeout, could not start): a lint that
saw one is not kept by the result cache (kernlint.runner.resultcache)."""


def _transient() -> None:
    global TRANSIENT_FAILURES
    TRANSIENT_FAILURES += 1


def _device_only(text: str) -> str | None:
    """`text` with host code blanked (same lines), `#include <...>` kept: nvcc has the host headers."""
    try:
        from kernlint.frontend.device_source import device_only
    except ImportError:  # pragma: no cover - part of kernlint, but never fatal here
        return None
    try:
        code, _removed = device_only(text)
    except Exception:  # noqa: BLE001 - a best-effort fallback must not break the lint
        return None
    chars = list(code)
    for m in re.finditer(r"(?m)^[ \t]*#[ \t]*include[ \t]*<[^>\n]+>.*$", text):
        chars[m.start():m.end()] = text[m.start():m.end()]
    return "".join(chars)


def _inline_headers(code: str, base_dir: str, include_dirs: tuple[str, ...], filename: str) -> str | None:
    """`code` with its project headers inlined, their host code left out (`#line` keeps locations)."""
    try:
        from kernlint.frontend.device_source import inline_user_headers

        return inline_user_headers(code, base_dir, include_dirs, filename)
    except Exception:  # noqa: BLE001 - a best-effort fallback must not break the lint
        return None


NVCC_STUB_ROUNDS = 16
"""Bound on nvcc runs that each stub the headers the previous run could not open."""

_MISSING_RES = (
    lazy_compile(r"fatal error: (\S[^:\n]*): No such file or directory"),  # gcc/clang preprocessing
    lazy_compile(r'cannot open source file "([^"\n]+)"'),  # EDG front end (cudafe++)
)


def _missing_headers(output: str) -> list[str]:
    """Headers nvcc's output says it could not open, in order of appearance."""
    found: list[str] = []
    for line in output.splitlines():
        for rx in _MISSING_RES:
            m = rx.search(line)
            if m and m.group(1) not in found:
                found.append(m.group(1).strip())
    return found


def _system_header(name: str) -> bool:
    """Best effort, for messages only: is `name` in a usual system or CUDA include directory?"""
    dirs = ["/usr/include", "/usr/local/include", "/usr/local/cuda/include", *glob.glob("/usr/include/c++/*"),
            *glob.glob("/usr/include/*-linux-gnu")]
    return any(os.path.isfile(os.path.join(d, name)) for d in dirs)


def _write_stub(stub_dir: Path, root: Path, name: str) -> bool:
    """Create the stub header `name` as seen from `stub_dir` (empty, or a known library's types:
    known_headers); False if it would land outside `root`."""
    if os.path.isabs(name):
        return False
    target = Path(os.path.normpath(stub_dir / name))
    if root not in target.parents:
        return False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.write_text(stub_text(name))
    except OSError:
        return False
    return True


def resources_to_dict(resources: KernelResources) -> dict[str, Any]:
    """JSON-ready form (for metrics and caches)."""
    return asdict(resources)
