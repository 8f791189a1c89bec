"""The GPU side of `--confirm`: compile with NVRTC through CuPy, launch, and dump the trace.

This is the only module that imports CuPy, and it does so lazily. It runs in a child process
(`python -m kernlint.confirm.cupy_probe`): a kernel that faults leaves its CUDA context unusable
and one that hangs cannot be interrupted from Python, so isolating each batch of launches in a
process that the parent can kill is what keeps kernlint itself from ever crashing or hanging.

Protocol: one JSON job on stdin (see `kernlint.confirm.ProbeJob.to_json`); one JSON line per kernel
on stdout, written and flushed as soon as that kernel is done, so the parent knows how far a child
got before it died. Traces go to `.npz` files in the job's output directory.

The `except Exception` clauses are deliberate: CuPy raises many unrelated types (CompileException,
CUDARuntimeError, CUDADriverError, TypeError for an unsupported argument), and each one must
become a reported status for that kernel instead of ending the batch.
"""
from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any


def gpu_available() -> tuple[bool, str]:
    """Whether CuPy imports, a CUDA driver and device answer, and NVRTC loads; the reason when not."""
    try:
        import cupy  # type: ignore[import-not-found,unused-ignore]
    except Exception as exc:  # noqa: BLE001 (ImportError, or a CuPy build that cannot find its CUDA libraries)
        return False, f"CuPy is not importable: {type(exc).__name__}: {exc}; install kernlint[gpu]"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 (CUDARuntimeError: no driver, a driver too old, no device)
        text = f"{type(exc).__name__}: {exc}"
        if "InsufficientDriver" in text or "NoDevice" in text or "cudaErrorInitializationError" in text:
            return False, f"the CUDA driver is missing, too old for CuPy's CUDA runtime, or sees no device: {text}"
        return False, f"no CUDA device: {text}"
    if n < 1:
        return False, "no CUDA device: the driver reports 0 devices"
    try:
        cupy.cuda.nvrtc.getVersion()  # loads libnvrtc: without it every kernel would read as "rejected"
    except Exception as exc:  # noqa: BLE001
        return False, f"NVRTC, the CUDA runtime compiler, is not loadable: {type(exc).__name__}: {exc}"
    return True, ""


def nvrtc_compile(code: str, options: tuple[str, ...], names: list[str], arch: str = "80") -> tuple[bool, str]:
    """Compile `code` with NVRTC alone (no device, no driver needed): (compiled, log).

    The options CuPy's RawModule adds are added here too (`--device-as-default-execution-space`:
    an unannotated function is device code, so host code that reaches NVRTC is an error), so a
    check without a GPU sees what the GPU run will see. Used by the coverage bench and the tests.
    """
    from cupy.cuda import nvrtc  # type: ignore[import-not-found,unused-ignore]

    opts = (*options, f"-arch=compute_{arch}", "--device-as-default-execution-space", "-ftz=true",
            *(f"-I{d}" for d in _cuda_include_dirs()))
    prog = nvrtc.createProgram(code, "kernel.cu", (), ())
    try:
        for n in names:
            nvrtc.addNameExpression(prog, n)
        try:
            nvrtc.compileProgram(prog, opts)
        except nvrtc.NVRTCError:
            return False, nvrtc.getProgramLog(prog)
        return True, nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


def _cuda_include_dirs() -> list[str]:
    """The CUDA toolkit's include directories (cooperative_groups.h, mma.h, and CUDA 13's CCCL)."""
    import glob
    import os
    import shutil

    roots = [os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    roots += sorted(glob.glob("/usr/local/cuda-*"))[-1:]
    for root in roots:
        inc = os.path.join(root, "include") if root else ""
        if inc and os.path.isfile(os.path.join(inc, "cuda_runtime.h")):
            cccl = os.path.join(inc, "cccl")
            return [inc, cccl] if os.path.isdir(cccl) else [inc]
    return []


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _device_name(cupy: Any) -> str:
    try:
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        return f"{name} (sm_{props['major']}{props['minor']})"
    except Exception:  # noqa: BLE001
        return "CUDA device"


def _pointer_arg(cupy: Any, spec: dict[str, Any], keep: list[Any]) -> Any:
    front = int(spec["front"])
    buf = cupy.zeros(front + int(spec["bytes"]), dtype=cupy.uint8)
    keep.append(buf)  # the guard's ranges are read from `keep` (every buffer kernlint allocated)
    return buf[front:]


def _guard_ranges(np: Any, keep: list[Any]) -> Any:
    """[lo, hi) byte ranges of the synthesized buffers, flattened, as uint64."""
    pairs = [(int(b.data.ptr), int(b.data.ptr) + int(b.nbytes)) for b in keep]
    return np.array(pairs or [(0, 0)], dtype=np.uint64).ravel()


MAXR = 64  # instrument.GUARD_PRELUDE's __KL_MAXR


def set_guard(cupy: Any, np: Any, module: Any, k: dict[str, Any], keep: list[Any], scratch: Any,
              redirected: Any, only_sampled: bool) -> None:
    """Fill the `__constant__ __kl_guard_t __kl_g` of `module` for launch `k` (see instrument.GUARD_PRELUDE),
    and its seeds (`__kl_s` and sampled globals, confirm/seeding.py) before the guard's ranges are taken."""
    set_seeds(cupy, np, module, k.get("seed"), keep)
    ranges = np.zeros(2 * MAXR, dtype=np.uint64)
    pairs = _guard_ranges(np, keep)[: 2 * MAXR]
    ranges[: len(pairs)] = pairs
    s0, s1 = k["samples"]
    g = k.get("griddim") or k["grid"]
    words = np.array([min(len(keep), MAXR), *g, *s0, *s1, 1 if only_sampled else 0, 0], dtype=np.uint32)
    blob = ranges.tobytes() + np.array([scratch.data.ptr, redirected.data.ptr], dtype=np.uint64).tobytes() + words.tobytes()
    host = np.frombuffer(blob, dtype=np.uint8).copy()
    ptr = module.get_global("__kl_g")
    ptr.copy_from_host(host.ctypes.data, host.nbytes)


def set_seeds(cupy: Any, np: Any, module: Any, seed: dict[str, Any] | None, keep: list[Any]) -> None:
    """Write `__kl_s` (zeros when the launch seeds nothing: a module's kernels share it) and the sampled
    globals; loaded pointers get zeroed memory of their own, inside the guard's ranges."""
    try:
        ptr = module.get_global("__kl_s")
    except Exception:  # noqa: BLE001 (a build without the seeding prelude)
        return
    if not seed:
        return  # (the parent sends a seed, zeros included, with every launch of an instrumented build)
    host = np.frombuffer(bytes.fromhex(seed["hex"]), dtype=np.uint8).copy()
    if int(seed.get("nptr", 0)):
        mem = cupy.zeros(int(seed["nptr"]) * int(seed["pstride"]), dtype=cupy.uint8)
        keep.append(mem)
        at = int(seed["pbase_offset"])
        host[at:at + 8] = np.frombuffer(np.uint64(mem.data.ptr).tobytes(), dtype=np.uint8)
    ptr.copy_from_host(host.ctypes.data, host.nbytes)
    for g in seed.get("globals", ()):
        try:
            gptr = module.get_global(g["name"])
        except Exception as exc:  # noqa: BLE001
            raise ValueError(f"cannot set the sampled global {g['name']}: {exc}") from exc
        value = np.array(int(g["value"])).astype(g["dtype"])
        (gptr + int(g["offset"])).copy_from_host(value.ctypes.data, value.nbytes)


def _make_args(cupy: Any, np: Any, specs: list[dict[str, Any]], keep: list[Any]) -> list[Any]:
    args: list[Any] = []
    for spec in specs:
        t = spec["t"]
        if t == "ptr":
            args.append(_pointer_arg(cupy, spec, keep))
        elif t == "scalar":
            # (a sampled size given to a narrow type, `unsigned char n`, wraps as C converts it)
            args.append(np.array(spec["value"]).astype(spec["dtype"])[()] if not isinstance(spec["value"], float)
                        else np.dtype(spec["dtype"]).type(spec["value"]))
        elif t == "struct":
            names, formats, offsets = [], [], []
            values: list[Any] = []
            for i, f in enumerate(spec["fields"]):
                names.append(f"f{i}")
                formats.append(f["dtype"])
                offsets.append(int(f["offset"]))
                if "ptr" in f:
                    view = _pointer_arg(cupy, f["ptr"], keep)
                    values.append(view.data.ptr)
                else:
                    # (a sampled value in a narrow field, `uchar4 c` with c.x = 3328, wraps as C converts it)
                    v = f.get("value", 0)
                    values.append(np.array(v).astype(f["dtype"])[()] if not isinstance(v, float) else v)
            dt = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": int(spec["size"])})
            rec = np.zeros(1, dtype=dt)
            for name, v in zip(names, values):
                rec[name] = v
            args.append(rec[0])
        else:
            raise ValueError(f"unknown argument kind {t!r}")
    return args


def _attributes(cupy: Any, module: Any, name_expr: str, block: int, shared: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        fn = module.get_function(name_expr)
        attrs = fn.attributes
        for k in ("num_regs", "shared_size_bytes", "local_size_bytes", "const_size_bytes",
                  "max_threads_per_block", "ptx_version", "binary_version"):
            if k in attrs:
                out[k] = int(attrs[k])
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    try:
        from cupy_backends.cuda.api import driver  # type: ignore[import-not-found,unused-ignore]

        ptr = fn.kernel.ptr if hasattr(fn, "kernel") else fn._kernel.ptr
        out["active_blocks"] = int(driver.occupancyMaxActiveBlocksPerMultiprocessor(ptr, block, shared))
        dev = cupy.cuda.Device()
        out["max_threads_per_sm"] = int(dev.attributes.get("MaxThreadsPerMultiProcessor", 0))
    except Exception as exc:  # noqa: BLE001
        out["occupancy_error"] = f"{type(exc).__name__}: {exc}"
    return out


NO_BLOCK = [0xFFFFFFFF] * 3


def _launches(k: dict[str, Any]) -> list[tuple[dict[str, Any], list[int], list[int], list[dict[str, Any]]]]:
    """The launches of one run: (spec for the guard, block traced as sample 0, as sample 1, arguments).

    One launch when both samples take the same values; else sample 0's block is traced with sample
    0's values and sample 1's block, in a second launch, with sample 1's (as the evaluator did).
    """
    s0, s1 = k["samples"]
    if k.get("args2") is None:  # (a kernel without parameters has `args2 == []`: its seeds still differ)
        return [(k, s0, s1, k["args"])]
    return [(dict(k, samples=[s0, NO_BLOCK]), s0, NO_BLOCK, k["args"]),
            (dict(k, samples=[NO_BLOCK, s1], seed=k.get("seed2", k.get("seed"))), NO_BLOCK, s1, k["args2"])]


def _trace_buffer(cupy: Any, np: Any, n: int, dtype: Any, held: list[int]) -> tuple[Any, Any]:
    """A zeroed trace array the kernel writes: (kernel argument, () -> numpy copy of its content).

    Mapped pinned host memory when the driver gives it (readable while a kernel hangs), else device memory.
    """
    import ctypes

    nbytes = int(n) * np.dtype(dtype).itemsize
    try:
        ptr = int(cupy.cuda.runtime.hostAlloc(nbytes, 2))  # cudaHostAllocMapped
        held.append(ptr)
        # With unified addressing (every 64-bit CUDA platform) a mapped allocation has the same
        # address on the device; CuPy may not expose cudaHostGetDevicePointer at all.
        get = getattr(cupy.cuda.runtime, "hostGetDevicePointer", None)
        dev = int(get(ptr, 0)) if get is not None else ptr
        view = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_uint8)), shape=(nbytes,)).view(dtype)
        view[:] = 0
        return np.uint64(dev), lambda: view.copy()
    except Exception:  # noqa: BLE001 (no mapped memory: a hang then loses the trace)
        arr = cupy.zeros(int(n), dtype=dtype)
        return arr, lambda: None  # (device memory cannot be read while a kernel hangs)


def _wait(cupy: Any, hang_s: float) -> bool:
    """Whether the launched work finished within `hang_s` seconds (0: wait as long as it takes)."""
    import time

    if hang_s <= 0:
        return True
    stream = cupy.cuda.get_current_stream()
    deadline = time.monotonic() + hang_s
    while not _finished(cupy, stream):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def _finished(cupy: Any, stream: Any) -> bool:
    """Whether the stream's work is over, successfully or not.

    A kernel that faulted (`__trap()`, an illegal address) has finished too: the stream reports its
    error, not "not ready", and the synchronize that follows raises it. (`Stream.done` is false for
    an errored stream, which made a fault look like a hang.)
    """
    rt = cupy.cuda.runtime
    not_ready = getattr(rt, "errorNotReady", 600)  # cudaErrorNotReady
    try:
        status = rt.streamQuery(stream.ptr)
    except Exception as exc:  # noqa: BLE001 (a wrapper that raises for every non-success status)
        return getattr(exc, "status", None) != not_ready
    return status != not_ready


def _save(np: Any, path: str, nsites: int, wpb: int, maxseq: int, addr: Any, mask: Any, ballot: Any, count: Any,
          arrive: Any) -> None:
    """Write a trace; after a hang only `arrive` (mapped host memory) is readable, the rest is zeros."""
    if arrive is None:
        raise ValueError("the arrivals are in device memory")
    n = max(nsites, 0)
    shapes = {"addr": (n, 2, wpb, maxseq, 32), "mask": (n, 2, wpb, maxseq), "ballot": (n, 2, wpb, maxseq),
              "count": (n, 2, wpb), "arrive": (n, 2, wpb, 32)}
    dtypes = {"addr": np.uint64, "mask": np.uint32, "ballot": np.uint32, "count": np.uint32, "arrive": np.uint64}
    got = {"addr": addr, "mask": mask, "ballot": ballot, "count": count, "arrive": arrive}
    out = {}
    for key, shape in shapes.items():
        size = int(np.prod(shape))
        v = got[key]
        out[key] = (np.asarray(v)[:size].reshape(shape) if v is not None and size else
                    np.zeros(shape, dtype=dtypes[key]))
    np.savez(path, **out)


def run_job(job: dict[str, Any]) -> int:
    """Run every kernel of `job`; one JSON line each. Returns the process exit status."""
    try:
        import cupy
        import numpy as np
    except Exception as exc:  # noqa: BLE001
        _emit({"id": None, "status": "no-gpu", "message": f"CuPy is not importable: {exc}"})
        return 0
    device = _device_name(cupy)
    options = tuple(job["options"])
    if job.get("plain_only"):
        return _run_plain(cupy, np, job, device)
    names = [k["name_expr"] for k in job["kernels"]]
    try:
        module = cupy.RawModule(code=job["code"], options=options,
                                name_expressions=[*names, "__kl_set_ctl"])
        module.compile()
    except Exception as exc:  # noqa: BLE001
        msg = str(exc)
        for k in job["kernels"]:
            _emit({"id": k["id"], "status": "compile-error", "message": msg[-4000:], "device": device})
        return 0
    plain = None
    if job.get("plain"):
        try:
            plain = cupy.RawModule(code=job["plain"], options=options, name_expressions=names)
            plain.compile()
        except Exception:  # noqa: BLE001
            plain = None
    set_ctl = module.get_function("__kl_set_ctl")
    held: list[int] = []
    for k in job["kernels"]:
        keep: list[Any] = []
        try:
            fn = module.get_function(k["name_expr"])
            nsites, wpb, maxseq = int(k["nsites"]), int(k["wpb"]), int(k["maxseq"])
            slots = max(1, nsites * 2 * wpb * maxseq)
            addr = cupy.zeros(slots * 32, dtype=cupy.uint64)
            mask = cupy.zeros(slots, dtype=cupy.uint32)
            ballot = cupy.zeros(slots, dtype=cupy.uint32)
            count = cupy.zeros(max(1, nsites * 2 * wpb), dtype=cupy.uint32)
            # Arrivals at barriers and collectives live in mapped host memory: a kernel that hangs there
            # (a barrier in divergent code) leaves them readable from here.
            arrive, arrive_h = _trace_buffer(cupy, np, max(1, nsites * 2 * wpb * 32), np.uint64, held)
            scratch = cupy.zeros(4096, dtype=cupy.uint8)
            redirected = cupy.zeros(1, dtype=cupy.uint64)
            hung = False
            for k1, s0, s1, arg_specs in _launches(k):
                args = _make_args(cupy, np, arg_specs, keep)
                set_ctl((1,), (1,), (addr, mask, ballot, count, arrive, np.uint32(wpb), np.uint32(maxseq),
                                     *(np.uint32(v) for v in s0), *(np.uint32(v) for v in s1)))
                set_guard(cupy, np, module, k1, keep, scratch, redirected, bool(k.get("only_sampled")))
                fn(tuple(k["grid"]), tuple(k["block"]), tuple(args), shared_mem=int(k.get("shared", 0)))
                if not _wait(cupy, float(job.get("hang_s", 0) or 0)):
                    hung = True
                    break
                cupy.cuda.runtime.deviceSynchronize()
            if hung:
                path = f"{job['out']}/trace_{k['id']}.npz"
                try:
                    _save(np, path, nsites, wpb, maxseq, None, None, None, None, arrive_h())
                    _emit({"id": k["id"], "status": "hang", "trace": path, "device": device, "attributes": {},
                           "message": f"the kernel did not finish within {job.get('hang_s')} s (a hang); the "
                                      "trace recorded up to then was kept"})
                except Exception:  # noqa: BLE001 (no mapped memory: a plain timeout)
                    _emit({"id": k["id"], "status": "timeout", "device": device,
                           "message": f"no result within {job.get('hang_s')} s (hang?)"})
                os._exit(4)  # the context is stuck: only leaving the process frees it
            cupy.cuda.runtime.deviceSynchronize()
        except Exception as exc:  # noqa: BLE001
            text = f"{type(exc).__name__}: {exc}"
            fault = "cudaError" in text or "CUDA_ERROR" in text or "CUDARuntimeError" in text or \
                "CUDADriverError" in text
            _emit({"id": k["id"], "status": "fault" if fault else "error", "message": text[-2000:],
                   "trace": traceback.format_exc()[-2000:], "device": device})
            if fault:
                return 3  # the context is gone: the parent starts a new process for the rest
            continue
        path = f"{job['out']}/trace_{k['id']}.npz"
        _save(np, path, nsites, wpb, maxseq, addr.get(), mask.get(), ballot.get(), count.get(), arrive_h())
        for ptr in held:
            cupy.cuda.runtime.freeHost(ptr)
        held.clear()
        attrs = _attributes(cupy, plain or module, k["name_expr"], int(np.prod(k["block"])), int(k.get("shared", 0))) \
            if plain is not None else {}
        _emit({"id": k["id"], "status": "ok", "trace": path, "attributes": attrs, "device": device,
               "redirected": int(redirected.get()[0])})
        del keep
    return 0


def _run_plain(cupy: Any, np: Any, job: dict[str, Any], device: str) -> int:
    """Launch the uninstrumented kernels once each (for a profiler watching this process)."""
    names = [k["name_expr"] for k in job["kernels"]]
    try:
        module = cupy.RawModule(code=job["plain"], options=tuple(job["options"]), name_expressions=names)
        module.compile()
    except Exception as exc:  # noqa: BLE001
        for k in job["kernels"]:
            _emit({"id": k["id"], "status": "compile-error", "message": str(exc)[-4000:], "device": device})
        return 0
    for k in job["kernels"]:
        keep: list[Any] = []
        try:
            fn = module.get_function(k["name_expr"])
            scratch = cupy.zeros(4096, dtype=cupy.uint8)
            redirected = cupy.zeros(1, dtype=cupy.uint64)
            for k1, _s0, _s1, arg_specs in (_launches(k) if job.get("guarded") else [(k, [], [], k["args"])]):
                args = _make_args(cupy, np, arg_specs, keep)
                if job.get("guarded"):
                    set_guard(cupy, np, module, k1, keep, scratch, redirected, bool(k.get("only_sampled")))
                fn(tuple(k["grid"]), tuple(k["block"]), tuple(args), shared_mem=int(k.get("shared", 0)))
                cupy.cuda.runtime.deviceSynchronize()
        except Exception as exc:  # noqa: BLE001
            _emit({"id": k["id"], "status": "fault", "message": f"{type(exc).__name__}: {exc}"[-2000:],
                   "device": device})
            return 3
        _emit({"id": k["id"], "status": "ok", "device": device})
    return 0


def main() -> int:
    job = json.loads(sys.stdin.read())
    if job.get("check"):
        ok, why = gpu_available()
        _emit({"ok": ok, "message": why})
        return 0
    return run_job(job)


if __name__ == "__main__":
    sys.exit(main())
