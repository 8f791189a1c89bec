"""What the index keeps per file (frozen data, cached as JSON): see `scan` for how it is found."""
from __future__ import annotations

from kernlint.base.frozen import frozen


SCAN_VERSION = 16  # bump when FileFacts or the scan changes: cached entries of older versions are ignored


@frozen
class RawLaunch:
    kernel: str
    template_args: tuple[str, ...]
    config: tuple[str, ...]  # grid, block[, shared bytes[, stream]] as written
    args: tuple[str, ...]
    line: int
    host: str = ""  # the enclosing host function's name
    host_params: tuple[tuple[str, bool, str], ...] = ()  # its template parameters (name, is_type, default)
    locals: tuple[tuple[str, str], ...] = ()  # simple `[const] int|dim3 NAME = ...` of the host function
    host_args: tuple[str, ...] = ()  # the host function's parameter names (a launch argument naming one stays unknown)
    arg_offsets: tuple[str, ...] = ()  # per argument, a pointer offset it passes ("" none; frontend/pointer_offsets.py)
    arg_types: tuple[str, ...] = ()  # per argument naming a host variable, its declared type (`floatX *`; "" unknown)
    host_arg_types: tuple[str, ...] = ()  # in a host function template: its parameters' declared types
    # The configuration as clang folded it (project/clang_scan.py; None: not folded, the text is folded instead)
    grid_value: tuple[int, int, int] | None = None
    block_value: tuple[int, int, int] | None = None
    shared_value: int | None = None
    block_dims: tuple[str, ...] = ()  # ir.Launch.block_dims, as clang read them (`threads`, an int parameter)
    dim_values: tuple[tuple[str, tuple[int, ...]], ...] = ()  # ir.Launch.dim_values, as clang read them


@frozen
class KernelDef:
    name: str
    line: int
    template_params: tuple[tuple[str, bool, str], ...] = ()


@frozen
class FileFacts:
    includes: tuple[tuple[str, bool, int], ...] = ()  # (name, quoted, line)
    defines: tuple[tuple[str, str], ...] = ()  # object-like macros: NAME -> body text
    constants: tuple[tuple[str, str], ...] = ()  # file-scope `constexpr/const int NAME = ...;`
    kernels: tuple[KernelDef, ...] = ()
    launches: tuple[RawLaunch, ...] = ()
    instantiations: tuple[tuple[str, tuple[str, ...], int], ...] = ()
    template_calls: tuple[tuple[str, tuple[str, ...], int], ...] = ()  # `name<args>(` outside launches
    cuda: bool = False  # defines kernels/device code or launches
    # File-scope `typedef float T;` / `using T = float;`: NAME -> the type as written (a launch
    # `k<T><<<...>>>` in such a file binds the kernel's parameter to the aliased type).
    type_aliases: tuple[tuple[str, str], ...] = ()
    # Calls with arguments of declared pointer types: (name, declared type per argument, line).
    typed_calls: tuple[tuple[str, tuple[str, ...], int], ...] = ()
    # In a file that launches: per function defined here, (its name, the names it calls or takes the
    # address of), by braces (project/reach.py): how a host template reached from another file launches.
    host_calls: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Function templates defined at file scope: (name, template parameters, first line, last line): which
    # host template a `host<T>(...)` call naming a parameter T is in (its own calls bind T; index.py).
    function_templates: tuple[tuple[str, tuple[tuple[str, bool, str], ...], int, int], ...] = ()
    read_by_clang: bool = False  # launches and instantiations come from libclang (project/clang_scan.py)
