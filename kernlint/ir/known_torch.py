"""The stub for missing PyTorch headers (`torch/`, `ATen/`, `c10/`): scalar types, the dispatch macros, a host-side Tensor.

PyTorch C++/CUDA extensions launch their kernels inside ATen's dispatch macros:

    AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(), "op", [&] {
      k<scalar_t><<<grid, block, 0, stream>>>(out.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), n);
    });

Without PyTorch's headers (kernlint ships none and needs no PyTorch) the macro is an undeclared call,
`scalar_t` an undeclared name, and the launch is lost. The stub declares what the launch reader and the
host code around a launch need, following PyTorch's own definitions:

- `c10::ScalarType` with the enumerators of c10/core/ScalarType.h in their order (Byte = 0 ... BFloat16 =
  15 ...: AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS), the `k*` constants of that header, and
  `c10::impl::ScalarTypeToCPPTypeT<S>`, the C++ type of each (same header: uint8_t, int8_t, int16_t, int,
  int64_t, Half, float, double, complex<...>, bool, BFloat16).
- `c10::Half` and `c10::BFloat16`: 2-byte structs aligned to 2 (c10/util/Half.h: `struct alignas(2) Half
  { unsigned short x; ... }`; c10/util/BFloat16.h: `struct alignas(2) BFloat16 { uint16_t x; ... }`) that
  convert to and from float; `c10::complex<T>` aligned to twice its part (c10/util/complex.h:
  `struct alignas(sizeof(T) * 2) complex`). The element size of a dispatched kernel comes from these.
- The dispatch macros of ATen/Dispatch.h, expanding as they do there: `AT_DISPATCH_SWITCH(TYPE, NAME, ...)`
  is a lambda called at once that switches on the scalar type, and each `AT_DISPATCH_CASE(S, f)` is
  `case S: { using scalar_t = c10::impl::ScalarTypeToCPPTypeT<S>; return f(); }`, so the user's lambda
  is written once per listed type with `scalar_t` bound. The type lists are ATen's: FLOATING = Double,
  Float; REDUCED_FLOATING = Half, BFloat16; INTEGRAL = Byte, Char, Int, Long, Short; ALL = INTEGRAL then
  FLOATING; COMPLEX = ComplexDouble, ComplexFloat; the `_AND`, `_AND2`, `_AND3` forms add their arguments
  after the list. The older `AT_PRIVATE_CASE_TYPE(enum, type, f)` (PyTorch 1.x) is the same case with the
  type given.
- A host-side `at::Tensor` (also `torch::Tensor`) with the methods extension code calls around a launch
  (`data_ptr<T>()`, `size(i)`, `stride(i)`, `numel()`, `scalar_type()`, `options()`, ...), the factories
  that make outputs (`torch::empty`, `empty_like`, `zeros`, `zeros_like`), `at::cuda::getCurrentCUDAStream()`
  (a CUDAStream that converts to `cudaStream_t`, c10/cuda/CUDAStream.h), the device guards of
  c10/cuda/CUDAGuard.h and `device_of`. None has a body: their values are unknown to kernlint.
- The checks (`TORCH_CHECK`, `AT_ASSERT`, `TORCH_INTERNAL_ASSERT`, `C10_CUDA_KERNEL_LAUNCH_CHECK()`) do
  nothing; `C10_CUDA_CHECK(e)` keeps `e` (a `cudaFuncSetAttribute` call inside it is still read).

Host code using more of PyTorch than this costs host parse errors only: launches elsewhere are still read.
Every PyTorch header gets the whole stub, once (it has a guard); a real header found with -I always wins
(stubs are searched after every include directory).
"""
from __future__ import annotations

from kernlint.base.lazy_re import lazy_compile

# (c10/core/ScalarType.h, AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS: the enumerator order, with C++ types)
_SCALAR_TYPES = (
    ("Byte", "uint8_t"), ("Char", "int8_t"), ("Short", "int16_t"), ("Int", "int"), ("Long", "int64_t"),
    ("Half", "c10::Half"), ("Float", "float"), ("Double", "double"), ("ComplexHalf", "c10::complex<c10::Half>"),
    ("ComplexFloat", "c10::complex<float>"), ("ComplexDouble", "c10::complex<double>"), ("Bool", "bool"),
    ("QInt8", ""), ("QUInt8", ""), ("QInt32", ""), ("BFloat16", "c10::BFloat16"), ("QUInt4x2", ""),
    ("QUInt2x4", ""), ("Bits1x8", ""), ("Bits2x4", ""), ("Bits4x2", ""), ("Bits8", ""), ("Bits16", ""),
    ("Float8_e5m2", ""), ("Float8_e4m3fn", ""), ("Float8_e5m2fnuz", ""), ("Float8_e4m3fnuz", ""),
)
# (c10/core/ScalarType.h: `constexpr ScalarType k##name = ScalarType::name` for each, plus the aliases
# kFloat32, kFloat64, kInt32, kInt64, kInt16, kInt8, kUInt8, kFloat16, kComplexFloat32/64)
_ALIASES = (("kFloat32", "Float"), ("kFloat64", "Double"), ("kFloat16", "Half"), ("kInt8", "Char"),
            ("kUInt8", "Byte"), ("kInt16", "Short"), ("kInt32", "Int"), ("kInt64", "Long"))


def _scalar_types() -> str:
    enum = ", ".join(f"{n} = {i}" for i, (n, _t) in enumerate(_SCALAR_TYPES))
    consts = "\n".join(f"constexpr ScalarType k{n} = ScalarType::{n};" for n, _t in _SCALAR_TYPES)
    consts += "\n" + "\n".join(f"constexpr ScalarType {a} = ScalarType::{n};" for a, n in _ALIASES)
    cpp = "\n".join(f"template <> struct ScalarTypeToCPPType<ScalarType::{n}> {{ using type = {t}; }};"
                    for n, t in _SCALAR_TYPES if t)
    return f"""\
namespace c10 {{
enum class ScalarType : int8_t {{ {enum}, Undefined, NumOptions }};
{consts}
namespace impl {{
template <ScalarType S> struct ScalarTypeToCPPType;
{cpp}
template <ScalarType S> using ScalarTypeToCPPTypeT = typename ScalarTypeToCPPType<S>::type;
}}  // namespace impl
}}  // namespace c10
"""


def _complex_operators() -> str:
    # (c10/util/complex.h: each arithmetic operator between two complex<T>, and between complex<T> and T
    # either side; their values are unknown to kernlint, no body)
    out = []
    for op in "+-*/":
        for a, b in (("const complex<T> &", "const complex<T> &"), ("const complex<T> &", "const T &"),
                     ("const T &", "const complex<T> &")):
            out.append(f"template <typename T> __host__ __device__ complex<T> operator{op}({a}lhs, {b}rhs);")
    out.append("template <typename T> __host__ __device__ bool operator==(const complex<T> &lhs, const complex<T> &rhs);")
    return "\n".join(out) + "\n"


# (ATen/Dispatch.h: the case lists)
_LISTS = {
    "FLOATING_TYPES": ("Double", "Float"),
    "FLOATING_TYPES_AND_HALF": ("Double", "Float", "Half"),
    "REDUCED_FLOATING_TYPES": ("Half", "BFloat16"),
    "INTEGRAL_TYPES": ("Byte", "Char", "Int", "Long", "Short"),
    "ALL_TYPES": ("Byte", "Char", "Int", "Long", "Short", "Double", "Float"),
    "COMPLEX_TYPES": ("ComplexDouble", "ComplexFloat"),
    "FLOATING_AND_COMPLEX_TYPES": ("Double", "Float", "ComplexDouble", "ComplexFloat"),
    "ALL_TYPES_AND_COMPLEX": ("Byte", "Char", "Int", "Long", "Short", "Double", "Float", "ComplexDouble",
                              "ComplexFloat"),
}
_EXTRA = {"": 0, "_AND": 1, "_AND2": 2, "_AND3": 3, "_AND4": 4}
# (the `_AND` forms ATen defines for each list; FLOATING_AND_COMPLEX's first is spelled `_AND1`)
_FORMS = {
    "FLOATING_TYPES": ("", "_AND", "_AND2", "_AND3", "_AND4"),
    "FLOATING_TYPES_AND_HALF": ("",),
    "REDUCED_FLOATING_TYPES": ("",),
    "INTEGRAL_TYPES": ("", "_AND"),
    "ALL_TYPES": ("", "_AND", "_AND2", "_AND3"),
    "COMPLEX_TYPES": ("", "_AND"),
    "FLOATING_AND_COMPLEX_TYPES": ("", "_AND1", "_AND2", "_AND3"),
    "ALL_TYPES_AND_COMPLEX": ("", "_AND", "_AND2", "_AND3"),
}


def _dispatch_macros() -> str:
    lines = []
    for lst, forms in _FORMS.items():
        for form in forms:
            n = _EXTRA.get(form, 1)
            extra = [f"S{i}" for i in range(1, n + 1)]
            cases = " ".join(f"AT_DISPATCH_CASE(at::ScalarType::{t}, __VA_ARGS__)" for t in _LISTS[lst])
            cases += "".join(f" AT_DISPATCH_CASE({s}, __VA_ARGS__)" for s in extra)
            params = "".join(f"{s}, " for s in extra)
            lines.append(f"#define AT_DISPATCH_CASE_{lst}{form}({params}...) {cases}")
            lines.append(f"#define AT_DISPATCH_{lst}{form}({params}TYPE, NAME, ...) "
                         f"AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_{lst}{form}({params}__VA_ARGS__))")
    return "\n".join(lines) + "\n"


TORCH = f"""\
#ifndef KERNLINT_KNOWN_TORCH
#define KERNLINT_KNOWN_TORCH
namespace c10 {{
struct __attribute__((aligned(2))) Half {{
  unsigned short x;
  __host__ __device__ Half() {{}}
  __host__ __device__ Half(float value);
  __host__ __device__ Half(const __half &value);
  __host__ __device__ operator float() const;
  __host__ __device__ operator __half() const;
}};
struct __attribute__((aligned(2))) BFloat16 {{
  unsigned short x;
  __host__ __device__ BFloat16() {{}}
  __host__ __device__ BFloat16(float value);
  __host__ __device__ BFloat16(const __nv_bfloat16 &value);
  __host__ __device__ operator float() const;
  __host__ __device__ operator __nv_bfloat16() const;
}};
template <typename T> struct __attribute__((aligned(sizeof(T) * 2))) complex {{
  T real_, imag_;
  __host__ __device__ complex() {{}}
  __host__ __device__ complex(const T &re, const T &im = T()) : real_(re), imag_(im) {{}}
  __host__ __device__ T real() const {{ return real_; }}
  __host__ __device__ T imag() const {{ return imag_; }}
  __host__ __device__ complex &operator+=(const complex &rhs);
  __host__ __device__ complex &operator-=(const complex &rhs);
  __host__ __device__ complex &operator*=(const complex &rhs);
  __host__ __device__ complex &operator/=(const complex &rhs);
  __host__ __device__ complex &operator+=(const T &rhs);
  __host__ __device__ complex &operator-=(const T &rhs);
  __host__ __device__ complex &operator*=(const T &rhs);
  __host__ __device__ complex &operator/=(const T &rhs);
}};
{_complex_operators()}}}  // namespace c10
// c10/util/complex.h adds `std::conj` (with std::real, std::imag, std::abs) for c10::complex
namespace std {{
template <typename T> __host__ __device__ c10::complex<T> conj(const c10::complex<T> &z) {{
  return c10::complex<T>(z.real_, -z.imag_);
}}
}}  // namespace std
{_scalar_types()}
namespace c10 {{
enum class DeviceType : int8_t {{ CPU = 0, CUDA = 1 }};
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
struct Device {{
  Device(DeviceType type, int index = -1);
  DeviceType type() const;
  int index() const;
  bool is_cuda() const;
  bool is_cpu() const;
}};
struct TypeMeta {{
  ScalarType toScalarType() const;
  operator ScalarType() const;
  size_t itemsize() const;
}};
struct TensorOptions {{
  TensorOptions();
  TensorOptions(ScalarType dtype);
  TensorOptions dtype(ScalarType dtype) const;
  TensorOptions device(Device device) const;
  TensorOptions device(DeviceType type, int index = -1) const;
  TypeMeta dtype() const;
  Device device() const;
  TensorOptions requires_grad(bool requires_grad) const;
}};
struct IntArrayRef {{
  template <class... Ts> IntArrayRef(Ts... values);
  size_t size() const;
  int64_t operator[](size_t i) const;
  const int64_t *data() const;
  const int64_t *begin() const;
  const int64_t *end() const;
  int64_t back() const;
  int64_t front() const;
}};
}}  // namespace c10
namespace at {{
using namespace c10;
class Tensor {{
public:
  Tensor();
  template <typename T> T *data_ptr() const;
  void *data_ptr() const;
  template <typename T> const T *const_data_ptr() const;
  const void *const_data_ptr() const;
  template <typename T> T *mutable_data_ptr() const;
  void *mutable_data_ptr() const;
  int64_t size(int64_t dim) const;
  IntArrayRef sizes() const;
  int64_t stride(int64_t dim) const;
  IntArrayRef strides() const;
  int64_t numel() const;
  int64_t dim() const;
  int64_t ndimension() const;
  int64_t element_size() const;
  int64_t itemsize() const;
  size_t nbytes() const;
  ScalarType scalar_type() const;
  TypeMeta dtype() const;
  bool is_contiguous() const;
  bool is_cuda() const;
  bool defined() const;
  Device device() const;
  int64_t get_device() const;
  TensorOptions options() const;
  Tensor contiguous() const;
  Tensor view(IntArrayRef size) const;
  Tensor reshape(IntArrayRef size) const;
  Tensor to(ScalarType dtype) const;
  Tensor zero_() const;
}};
Tensor empty(IntArrayRef size, TensorOptions options = TensorOptions());
Tensor empty_like(const Tensor &self);
Tensor empty_like(const Tensor &self, TensorOptions options);
Tensor zeros(IntArrayRef size, TensorOptions options = TensorOptions());
Tensor zeros_like(const Tensor &self);
Tensor zeros_like(const Tensor &self, TensorOptions options);
Device device_of(const Tensor &t);
namespace cuda {{
struct CUDAStream {{
  operator cudaStream_t() const;
  cudaStream_t stream() const;
}};
CUDAStream getCurrentCUDAStream(int device_index = -1);
CUDAStream getDefaultCUDAStream(int device_index = -1);
struct CUDAGuard {{ template <class D> explicit CUDAGuard(const D &device); }};
struct OptionalCUDAGuard {{
  OptionalCUDAGuard();
  template <class D> explicit OptionalCUDAGuard(const D &device);
}};
int current_device();
}}  // namespace cuda
}}  // namespace at
namespace c10 {{
namespace cuda {{
using at::cuda::CUDAStream;
using at::cuda::getCurrentCUDAStream;
using at::cuda::getDefaultCUDAStream;
using at::cuda::CUDAGuard;
using at::cuda::OptionalCUDAGuard;
}}  // namespace cuda
}}  // namespace c10
namespace torch {{
using namespace at;
}}  // namespace torch

// ATen/cuda/Atomic.cuh: `gpuAtomicAdd(address, val)` adds `val` at `address` atomically (an atomicAdd where
// the type has one; a compare-and-swap loop on the same address for the others); a complex adds its two
// parts, real then imaginary.
template <typename T> __device__ T gpuAtomicAdd(T *address, T val) {{ return atomicAdd(address, val); }}
template <typename T> __device__ void gpuAtomicAdd(c10::complex<T> *address, c10::complex<T> val) {{
  atomicAdd(reinterpret_cast<T *>(address), val.real_);
  atomicAdd(reinterpret_cast<T *>(address) + 1, val.imag_);
}}
template <typename T> __device__ void gpuAtomicAddNoReturn(T *address, T val) {{ gpuAtomicAdd(address, val); }}

#define TORCH_CHECK(...) ((void)0)
#define TORCH_CHECK_EQ(...) ((void)0)
#define TORCH_INTERNAL_ASSERT(...) ((void)0)
#define AT_ASSERT(...) ((void)0)
#define AT_ASSERTM(...) ((void)0)
#define AT_ERROR(...) ((void)0)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() ((void)0)
#define C10_CUDA_CHECK(EXPR) ((void)(EXPR))
#define AT_CUDA_CHECK(EXPR) ((void)(EXPR))

#define AT_DISPATCH_SWITCH(TYPE, NAME, ...) \\
  [&] {{ \\
    const auto &the_type = TYPE; \\
    at::ScalarType _st = the_type; \\
    switch (_st) {{ \\
      __VA_ARGS__ \\
      default: \\
        break; \\
    }} \\
  }}()
#define AT_PRIVATE_CASE_TYPE_USING_HINT(enum_type, HINT, ...) \\
  case enum_type: {{ \\
    using HINT = c10::impl::ScalarTypeToCPPTypeT<enum_type>; \\
    return __VA_ARGS__(); \\
  }}
#define AT_DISPATCH_CASE(enum_type, ...) AT_PRIVATE_CASE_TYPE_USING_HINT(enum_type, scalar_t, __VA_ARGS__)
#define AT_PRIVATE_CASE_TYPE(enum_type, type, ...) \\
  case enum_type: {{ \\
    using scalar_t = type; \\
    return __VA_ARGS__(); \\
  }}
{_dispatch_macros()}#endif
"""


def is_torch(name: str) -> bool:
    """Whether a missing include, as written, is one of PyTorch's headers (`torch/extension.h`,
    `ATen/cuda/CUDAContext.h`, `c10/cuda/CUDAGuard.h`): each gets the whole stub (once: it has a guard)."""
    return name.replace("\\", "/").startswith(("torch/", "ATen/", "c10/"))


_TORCH_NAME_RE = lazy_compile(r"(?<![\w:])(?:c10|at|torch)::")


def binding_headers(binding: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """The PyTorch header a template binding needs declared (`scalar_t = c10::Half`, bound by a dispatch
    macro's launch in another file) to parse in a file that includes none: ("ATen/ATen.h",), else ()."""
    return ("ATen/ATen.h",) if any(_TORCH_NAME_RE.search(v) for _p, v in binding) else ()
