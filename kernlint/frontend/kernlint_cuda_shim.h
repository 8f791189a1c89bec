/* kernlint's self-contained CUDA shim: just enough declarations for clang to parse device code
 * without a CUDA toolkit. Parsed with -x cuda --cuda-device-only -nocudainc -nostdinc. */
#ifndef KERNLINT_CUDA_SHIM_H
#define KERNLINT_CUDA_SHIM_H
#define __KERNLINT__ 1
#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
#define __grid_constant__
#define CUDART_CB
#define CUDA_CB
#define __CUDA_RUNTIME_H__ 1
#define NULL 0
#define INFINITY __builtin_huge_valf()
#define NAN __builtin_nanf("")
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define DBL_MAX 1.7976931348623158e+308
#define INT_MAX 2147483647
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX 4294967295U
#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_PI_F 3.141592654f
#define M_PI 3.14159265358979323846
/* The rest of <math.h>'s POSIX constants (glibc math.h values), which device code uses as plain numbers */
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
// assert keeps its condition so the evaluator can tell a guessed block shape the kernel rules out
#define assert(x) __kernlint_assert(!!(x))
__host__ __device__ void __kernlint_assert(bool);
#define offsetof(t, m) __builtin_offsetof(t, m)

typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef long long intptr_t;
typedef unsigned long long uintptr_t;
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;
typedef int cudaError_t;
typedef long clock_t;
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
#define cudaSuccess 0

#define KL_VEC1(T, N, A) struct __attribute__((aligned(A))) N##1 { T x; };
#define KL_VEC2(T, N, A) struct __attribute__((aligned(A))) N##2 { T x, y; };
#define KL_VEC3(T, N) struct N##3 { T x, y, z; };
#define KL_VEC4(T, N, A) struct __attribute__((aligned(A))) N##4 { T x, y, z, w; };
#define KL_VECS(T, N, S) KL_VEC1(T, N, S) KL_VEC2(T, N, 2 * S) KL_VEC3(T, N) KL_VEC4(T, N, 4 * S)
KL_VECS(signed char, char, 1)
KL_VECS(unsigned char, uchar, 1)
KL_VECS(short, short, 2)
KL_VECS(unsigned short, ushort, 2)
KL_VECS(int, int, 4)
KL_VECS(unsigned int, uint, 4)
KL_VECS(long, long, 8)
KL_VECS(unsigned long, ulong, 8)
KL_VECS(long long, longlong, 8)
KL_VECS(unsigned long long, ulonglong, 8)
KL_VECS(float, float, 4)
KL_VEC1(double, double, 8) KL_VEC2(double, double, 16) KL_VEC3(double, double)
struct __attribute__((aligned(16))) double4 { double x, y, z, w; };

struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
extern const __device__ uint3 threadIdx;
extern const __device__ uint3 blockIdx;
extern const __device__ dim3 blockDim;
extern const __device__ dim3 gridDim;
extern const __device__ int warpSize;

struct __attribute__((aligned(2))) __half { unsigned short __x; __device__ __half() {} __device__ __half(float); __device__ operator float() const; };
struct __attribute__((aligned(4))) __half2 {
  __half x, y;
  __device__ __half2() = default;
  __device__ __half2(const __half& a, const __half& b) : x(a), y(b) {}
};
/* cuda_fp16.hpp's operators on __half2 (__half converts to float, so its arithmetic needs none). */
__device__ __half2 operator+(const __half2&, const __half2&); __device__ __half2 operator-(const __half2&, const __half2&);
__device__ __half2 operator*(const __half2&, const __half2&); __device__ __half2 operator/(const __half2&, const __half2&);
__device__ __half2& operator+=(__half2&, const __half2&); __device__ __half2& operator*=(__half2&, const __half2&);
struct __attribute__((aligned(2))) __nv_bfloat16 { unsigned short __x; __device__ __nv_bfloat16() {} __device__ __nv_bfloat16(float); __device__ operator float() const; };
struct __attribute__((aligned(4))) __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
__device__ float __half2float(__half);
__device__ __half __float2half(float);
__device__ float __bfloat162float(__nv_bfloat16);
__device__ __nv_bfloat16 __float2bfloat16(float);

#define KL_MAKE2(N, T) __host__ __device__ N##2 make_##N##2(T, T);
#define KL_MAKE3(N, T) __host__ __device__ N##3 make_##N##3(T, T, T);
#define KL_MAKE4(N, T) __host__ __device__ N##4 make_##N##4(T, T, T, T);
#define KL_MAKES(N, T) KL_MAKE2(N, T) KL_MAKE3(N, T) KL_MAKE4(N, T)
KL_MAKES(float, float) KL_MAKES(int, int) KL_MAKES(uint, unsigned int) KL_MAKES(double, double)
KL_MAKES(char, signed char) KL_MAKES(uchar, unsigned char) KL_MAKES(short, short) KL_MAKES(ushort, unsigned short)

/* Synchronisation and warp intrinsics. */
__device__ void __syncthreads();
__device__ int __syncthreads_count(int);
__device__ int __syncthreads_and(int);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned int mask = 0xffffffffu);
__device__ void __threadfence();
__device__ void __threadfence_block();
__device__ void __threadfence_system();
__device__ unsigned int __activemask();
__device__ unsigned int __ballot_sync(unsigned int, int);
__device__ int __any_sync(unsigned int, int);
__device__ int __all_sync(unsigned int, int);
__device__ unsigned int __match_any_sync(unsigned int, int);
template <class T> __device__ T __shfl_sync(unsigned int, T, int, int = 32);
template <class T> __device__ T __shfl_up_sync(unsigned int, T, unsigned int, int = 32);
template <class T> __device__ T __shfl_down_sync(unsigned int, T, unsigned int, int = 32);
template <class T> __device__ T __shfl_xor_sync(unsigned int, T, int, int = 32);
template <class T> __device__ T __shfl(T, int, int = 32);
template <class T> __device__ T __shfl_down(T, unsigned int, int = 32);
template <class T> __device__ T __shfl_up(T, unsigned int, int = 32);
template <class T> __device__ T __shfl_xor(T, int, int = 32);
__device__ unsigned int __reduce_add_sync(unsigned int, unsigned int);
__device__ unsigned int __reduce_min_sync(unsigned int, unsigned int);
__device__ unsigned int __reduce_max_sync(unsigned int, unsigned int);
__device__ unsigned int __reduce_and_sync(unsigned int, unsigned int);
__device__ unsigned int __reduce_or_sync(unsigned int, unsigned int);
__device__ unsigned int __reduce_xor_sync(unsigned int, unsigned int);
template <class T> __device__ T __ldg(const T*);
template <class T> __device__ T __ldcg(const T*);
template <class T> __device__ T __ldcs(const T*);
template <class T> __device__ T __ldca(const T*);
template <class T> __device__ T __ldlu(const T*);
template <class T> __device__ void __stcg(T*, T);
template <class T> __device__ void __stcs(T*, T);
template <class T> __device__ void __stwt(T*, T);
/* Atomic functions, each for the types the CUDA C++ Programming Guide lists ("Atomic Functions"),
 * with the _block and _system scope variants. */
#define KL_AT2(N, T) __device__ T N(T*, T); __device__ T N##_block(T*, T); __device__ T N##_system(T*, T);
#define KL_AT3(N, T) __device__ T N(T*, T, T); __device__ T N##_block(T*, T, T); __device__ T N##_system(T*, T, T);
KL_AT2(atomicAdd, int) KL_AT2(atomicAdd, unsigned int) KL_AT2(atomicAdd, unsigned long long int)
KL_AT2(atomicAdd, float) KL_AT2(atomicAdd, double) KL_AT2(atomicAdd, __half2) KL_AT2(atomicAdd, __half)
KL_AT2(atomicAdd, __nv_bfloat162) KL_AT2(atomicAdd, __nv_bfloat16) KL_AT2(atomicAdd, float2) KL_AT2(atomicAdd, float4)
KL_AT2(atomicSub, int) KL_AT2(atomicSub, unsigned int)
KL_AT2(atomicExch, int) KL_AT2(atomicExch, unsigned int) KL_AT2(atomicExch, unsigned long long int) KL_AT2(atomicExch, float)
KL_AT2(atomicMin, int) KL_AT2(atomicMin, unsigned int) KL_AT2(atomicMin, unsigned long long int) KL_AT2(atomicMin, long long int)
KL_AT2(atomicMax, int) KL_AT2(atomicMax, unsigned int) KL_AT2(atomicMax, unsigned long long int) KL_AT2(atomicMax, long long int)
KL_AT2(atomicInc, unsigned int) KL_AT2(atomicDec, unsigned int)
KL_AT3(atomicCAS, int) KL_AT3(atomicCAS, unsigned int) KL_AT3(atomicCAS, unsigned long long int) KL_AT3(atomicCAS, unsigned short int)
KL_AT2(atomicAnd, int) KL_AT2(atomicAnd, unsigned int) KL_AT2(atomicAnd, unsigned long long int)
KL_AT2(atomicOr, int) KL_AT2(atomicOr, unsigned int) KL_AT2(atomicOr, unsigned long long int)
KL_AT2(atomicXor, int) KL_AT2(atomicXor, unsigned int) KL_AT2(atomicXor, unsigned long long int)
__device__ int __popc(unsigned int);
__device__ int __popcll(unsigned long long);
__device__ int __clz(int);
__device__ int __clzll(long long);
__device__ int __ffs(int);
__device__ int __ffsll(long long);
__device__ unsigned int __brev(unsigned int);
__device__ int __mul24(int, int);
__device__ unsigned int __umul24(unsigned int, unsigned int);
__device__ int __mulhi(int, int);
__device__ unsigned int __umulhi(unsigned int, unsigned int);
__device__ long long clock64();
__device__ int clock();
__device__ unsigned int __laneid();
__device__ void __nanosleep(unsigned int);
extern "C" __device__ int printf(const char*, ...);
extern "C" __device__ void* memcpy(void*, const void*, size_t);
extern "C" __device__ void* memset(void*, int, size_t);
extern "C" __device__ void* malloc(size_t);
extern "C" __device__ void free(void*);
extern "C" __device__ void __trap();
extern "C" __device__ void __brkpt();

/* Math: float, double and the fast intrinsics. */
#define KL_F1(n) __device__ float n##f(float); __device__ double n(double);
#define KL_F2(n) __device__ float n##f(float, float); __device__ double n(double, double);
KL_F1(sqrt) KL_F1(rsqrt) KL_F1(cbrt) KL_F1(exp) KL_F1(exp2) KL_F1(exp10) KL_F1(expm1) KL_F1(log) KL_F1(log2) KL_F1(log10) KL_F1(log1p)
KL_F1(sin) KL_F1(cos) KL_F1(tan) KL_F1(asin) KL_F1(acos) KL_F1(atan) KL_F1(sinh) KL_F1(cosh) KL_F1(tanh) KL_F1(erf) KL_F1(erfc)
KL_F1(fabs) KL_F1(floor) KL_F1(ceil) KL_F1(round) KL_F1(trunc) KL_F1(rint) KL_F1(lgamma) KL_F1(tgamma) KL_F1(asinh) KL_F1(acosh) KL_F1(atanh)
KL_F2(pow) KL_F2(fmax) KL_F2(fmin) KL_F2(fmod) KL_F2(atan2) KL_F2(hypot) KL_F2(copysign) KL_F2(fdim) KL_F2(remainder)
__device__ float fmaf(float, float, float); __device__ double fma(double, double, double);
__device__ void sincosf(float, float*, float*); __device__ void sincos(double, double*, double*);
__device__ float __expf(float); __device__ float __logf(float); __device__ float __sinf(float); __device__ float __cosf(float);
__device__ float __powf(float, float); __device__ float __fdividef(float, float); __device__ float __frcp_rn(float);
__device__ float __fsqrt_rn(float); __device__ float __saturatef(float); __device__ float __fmaf_rn(float, float, float);
__device__ float __fadd_rn(float, float); __device__ float __fmul_rn(float, float); __device__ float __tanhf(float);
__device__ float __int_as_float(int); __device__ int __float_as_int(float); __device__ unsigned int __float_as_uint(float);
__device__ float __uint_as_float(unsigned int); __device__ int __float2int_rn(float); __device__ int __float2int_rz(float);
__device__ float __int2float_rn(int); __device__ long long __double_as_longlong(double); __device__ double __longlong_as_double(long long);
__device__ int isnan(float); __device__ int isinf(float); __device__ int isfinite(float);
__host__ __device__ int min(int, int); __host__ __device__ unsigned int min(unsigned int, unsigned int);
__host__ __device__ long long min(long long, long long); __host__ __device__ float min(float, float); __host__ __device__ double min(double, double);
__host__ __device__ int max(int, int); __host__ __device__ unsigned int max(unsigned int, unsigned int);
__host__ __device__ long long max(long long, long long); __host__ __device__ float max(float, float); __host__ __device__ double max(double, double);
__host__ __device__ unsigned int umin(unsigned int, unsigned int); __host__ __device__ unsigned int umax(unsigned int, unsigned int);
__host__ __device__ int abs(int); __host__ __device__ long long llabs(long long);
/* The rest of the CUDA Math API (CUDA Math API reference: single, double, integer and type-casting
 * intrinsics), so that none of it is an unresolved name. */
__host__ __device__ unsigned int min(int, unsigned int); __host__ __device__ unsigned int min(unsigned int, int);
__host__ __device__ unsigned int max(int, unsigned int); __host__ __device__ unsigned int max(unsigned int, int);
__host__ __device__ unsigned long long min(unsigned long long, unsigned long long);
__host__ __device__ unsigned long long max(unsigned long long, unsigned long long);
__host__ __device__ long long llmin(long long, long long); __host__ __device__ long long llmax(long long, long long);
__host__ __device__ unsigned long long ullmin(unsigned long long, unsigned long long);
__host__ __device__ unsigned long long ullmax(unsigned long long, unsigned long long);
__host__ __device__ long labs(long); __host__ __device__ float abs(float); __host__ __device__ double abs(double);
KL_F1(logb) KL_F1(nearbyint) KL_F1(erfinv) KL_F1(erfcinv) KL_F1(normcdf) KL_F1(normcdfinv) KL_F1(j0) KL_F1(j1) KL_F1(y0) KL_F1(y1)
KL_F1(sinpi) KL_F1(cospi) KL_F1(rcbrt) KL_F1(exp10m1)
KL_F2(nextafter) KL_F2(rhypot)
__device__ float ldexpf(float, int); __device__ double ldexp(double, int); __device__ float scalbnf(float, int); __device__ double scalbn(double, int);
__device__ float frexpf(float, int*); __device__ double frexp(double, int*); __device__ float modff(float, float*); __device__ double modf(double, double*);
__device__ int ilogbf(float); __device__ int ilogb(double); __device__ long lroundf(float); __device__ long lround(double);
__device__ long long llroundf(float); __device__ long long llround(double); __device__ long lrintf(float); __device__ long lrint(double);
__device__ long long llrintf(float); __device__ long long llrint(double); __device__ float remquof(float, float, int*);
__device__ float norm3df(float, float, float); __device__ float rnorm3df(float, float, float); __device__ float norm4df(float, float, float, float);
__device__ double norm3d(double, double, double); __device__ float fmaf_rn(float, float, float);
__device__ void sincospif(float, float*, float*); __device__ int signbit(float); __device__ int __isnanf(float); __device__ int __isinff(float);
__device__ int isnan(double); __device__ int isinf(double); __device__ int isfinite(double);
__device__ float __log2f(float); __device__ float __log10f(float); __device__ float __exp10f(float); __device__ float __tanf(float);
__device__ void __sincosf(float, float*, float*); __device__ float __fsub_rn(float, float); __device__ float __fdiv_rn(float, float);
__device__ float __frsqrt_rn(float); __device__ float __fadd_rz(float, float); __device__ float __fmul_rz(float, float); __device__ float __fmaf_rz(float, float, float);
__device__ float __fdividef(float, float); __device__ float __frcp_rz(float); __device__ float __fsqrt_rz(float);
__device__ double __dadd_rn(double, double); __device__ double __dmul_rn(double, double); __device__ double __dsub_rn(double, double);
__device__ double __ddiv_rn(double, double); __device__ double __drcp_rn(double); __device__ double __dsqrt_rn(double); __device__ double __fma_rn(double, double, double);
__device__ int __float2int_rd(float); __device__ int __float2int_ru(float);
__device__ unsigned int __float2uint_rn(float); __device__ unsigned int __float2uint_rz(float); __device__ unsigned int __float2uint_rd(float); __device__ unsigned int __float2uint_ru(float);
__device__ long long __float2ll_rn(float); __device__ long long __float2ll_rz(float); __device__ unsigned long long __float2ull_rn(float); __device__ unsigned long long __float2ull_rz(float);
__device__ float __int2float_rz(int); __device__ float __int2float_rd(int); __device__ float __int2float_ru(int);
__device__ float __uint2float_rn(unsigned int); __device__ float __uint2float_rz(unsigned int);
__device__ float __ll2float_rn(long long); __device__ float __ull2float_rn(unsigned long long);
__device__ int __double2int_rn(double); __device__ int __double2int_rz(double); __device__ int __double2int_rd(double); __device__ int __double2int_ru(double);
__device__ unsigned int __double2uint_rn(double); __device__ unsigned int __double2uint_rz(double);
__device__ long long __double2ll_rn(double); __device__ long long __double2ll_rz(double);
__device__ float __double2float_rn(double); __device__ float __double2float_rz(double);
__device__ double __int2double_rn(int); __device__ double __uint2double_rn(unsigned int); __device__ double __ll2double_rn(long long);
__device__ int __double2hiint(double); __device__ int __double2loint(double); __device__ double __hiloint2double(int, int);
__device__ unsigned int __sad(int, int, unsigned int); __device__ unsigned int __usad(unsigned int, unsigned int, unsigned int);
__device__ long long __mul64hi(long long, long long); __device__ unsigned long long __umul64hi(unsigned long long, unsigned long long);
__device__ unsigned long long __brevll(unsigned long long); __device__ unsigned int __byte_perm(unsigned int, unsigned int, unsigned int);
__device__ unsigned int __funnelshift_l(unsigned int, unsigned int, unsigned int); __device__ unsigned int __funnelshift_r(unsigned int, unsigned int, unsigned int);
__device__ unsigned int __funnelshift_lc(unsigned int, unsigned int, unsigned int); __device__ unsigned int __funnelshift_rc(unsigned int, unsigned int, unsigned int);
__device__ int __hadd(int, int); __device__ int __rhadd(int, int); __device__ unsigned int __uhadd(unsigned int, unsigned int); __device__ unsigned int __urhadd(unsigned int, unsigned int);
__device__ int __fns(unsigned int, unsigned int, int); __device__ unsigned int __vabsdiffu4(unsigned int, unsigned int);
__device__ unsigned int __vadd4(unsigned int, unsigned int); __device__ unsigned int __vsub4(unsigned int, unsigned int);
__device__ unsigned int __vadd2(unsigned int, unsigned int); __device__ unsigned int __vsub2(unsigned int, unsigned int);
__device__ int __dp4a(int, int, int); __device__ unsigned int __dp4a(unsigned int, unsigned int, unsigned int);
__device__ int __dp2a_lo(int, int, int); __device__ int __dp2a_hi(int, int, int);

/* Host-side runtime API that launch code commonly calls. */
extern "C" int cudaConfigureCall(dim3, dim3, size_t = 0, cudaStream_t = 0);
extern "C" unsigned __cudaPushCallConfiguration(dim3, dim3, size_t = 0, cudaStream_t = 0);
/* Launches through the runtime API (CUDA Runtime API reference, "Execution Control"): read like chevron
   ones (frontend/clang_launches.py). The launch attributes are opaque here. */
cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t = 0, cudaStream_t = 0);
template <class T> cudaError_t cudaLaunchKernel(const T*, dim3, dim3, void**, size_t = 0, cudaStream_t = 0);
cudaError_t cudaLaunchCooperativeKernel(const void*, dim3, dim3, void**, size_t = 0, cudaStream_t = 0);
template <class T> cudaError_t cudaLaunchCooperativeKernel(const T*, dim3, dim3, void**, size_t = 0, cudaStream_t = 0);
struct cudaLaunchAttribute;
typedef struct cudaLaunchConfig_st {
  dim3 gridDim; dim3 blockDim; size_t dynamicSmemBytes; cudaStream_t stream;
  cudaLaunchAttribute* attrs; unsigned int numAttrs;
} cudaLaunchConfig_t;
template <typename... ExpTypes, typename... ActTypes>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t*, void (*)(ExpTypes...), ActTypes&&...);
cudaError_t cudaMalloc(void**, size_t);
template <class T> cudaError_t cudaMalloc(T**, size_t);
cudaError_t cudaFree(void*);
cudaError_t cudaMemcpy(void*, const void*, size_t, cudaMemcpyKind);
cudaError_t cudaMemcpyAsync(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t = 0);
cudaError_t cudaMemset(void*, int, size_t);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t);
cudaError_t cudaMallocManaged(void**, size_t, unsigned int = 1);
template <class T> cudaError_t cudaMallocManaged(T**, size_t, unsigned int = 1);
cudaError_t cudaStreamCreate(cudaStream_t*);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaEventCreate(cudaEvent_t*);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float*, cudaEvent_t, cudaEvent_t);
cudaError_t cudaFuncSetAttribute(const void*, int, int);
extern "C" int printf(const char*, ...);
extern "C" int fprintf(void*, const char*, ...);
extern "C" void* malloc(size_t);
extern "C" void free(void*);
extern "C" void exit(int);
extern "C" int rand();
extern void* stderr;
extern void* stdout;

namespace cooperative_groups {
struct thread_group { __device__ void sync() const; __device__ unsigned int size() const; __device__ unsigned int thread_rank() const; };
struct thread_block : thread_group {
  __device__ dim3 group_index() const; __device__ dim3 thread_index() const; __device__ dim3 group_dim() const;
  __device__ dim3 dim_threads() const; __device__ unsigned int num_threads() const;
};
template <unsigned int N> struct thread_block_tile : thread_group {
  __device__ unsigned int meta_group_size() const; __device__ unsigned int num_threads() const;
  template <class T> __device__ T shfl_up(T, unsigned int) const;
  template <class T> __device__ unsigned int match_any(T) const;
  template <class T> __device__ T shfl_down(T, unsigned int) const;
  template <class T> __device__ T shfl_xor(T, unsigned int) const;
  template <class T> __device__ T shfl(T, int) const;
  __device__ unsigned int ballot(int) const; __device__ int any(int) const; __device__ int all(int) const;
  __device__ unsigned int meta_group_rank() const;
};
struct grid_group : thread_group {
  __device__ unsigned long long num_threads() const; __device__ bool is_valid() const;
  __device__ unsigned long long block_rank() const; __device__ unsigned long long num_blocks() const;
  __device__ dim3 block_index() const; __device__ dim3 dim_blocks() const; __device__ dim3 group_dim() const;
};
struct coalesced_group : thread_group {
  template <class T> __device__ T shfl_down(T, unsigned int) const;
  template <class T> __device__ T shfl_up(T, unsigned int) const;
  template <class T> __device__ T shfl_xor(T, unsigned int) const;
  template <class T> __device__ T shfl(T, int) const;
  template <class T> __device__ unsigned int match_any(T) const;
  __device__ unsigned int ballot(int) const; __device__ int any(int) const; __device__ int all(int) const;
  __device__ unsigned int num_threads() const;
  __device__ unsigned int meta_group_rank() const; __device__ unsigned int meta_group_size() const;
};
template <unsigned int N> struct block_tile_memory {};
__device__ thread_block this_thread_block();
template <unsigned int N> __device__ thread_block this_thread_block(block_tile_memory<N>&);
__device__ grid_group this_grid();
__device__ coalesced_group coalesced_threads();
template <unsigned int N, class P> __device__ thread_block_tile<N> tiled_partition(const P&);
__device__ thread_group tiled_partition(const thread_group&, unsigned int);
__device__ coalesced_group labeled_partition(const coalesced_group&, int);
template <unsigned int N> __device__ coalesced_group labeled_partition(const thread_block_tile<N>&, int);
__device__ coalesced_group binary_partition(const coalesced_group&, bool);
template <unsigned int N> __device__ coalesced_group binary_partition(const thread_block_tile<N>&, bool);
template <class G> __device__ void sync(const G&);
template <class T> struct plus { __device__ T operator()(const T& a, const T& b) const; };
template <class T> struct bit_and { __device__ T operator()(const T& a, const T& b) const; };
template <class T> struct bit_or { __device__ T operator()(const T& a, const T& b) const; };
template <class T> struct bit_xor { __device__ T operator()(const T& a, const T& b) const; };
template <class T> struct less { __device__ T operator()(const T& a, const T& b) const; };
template <class T> struct greater { __device__ T operator()(const T& a, const T& b) const; };
template <class G, class T, class Op> __device__ T reduce(const G&, T, Op);
template <class G, class T, class Op> __device__ T inclusive_scan(const G&, T, Op);
template <class G, class T, class Op> __device__ T exclusive_scan(const G&, T, Op);
namespace details {}
}  // namespace cooperative_groups

/* Runtime structs kernels take by value (driver_types.h of the CUDA runtime API). */
struct cudaExtent { size_t width; size_t height; size_t depth; };
struct cudaPos { size_t x; size_t y; size_t z; };
struct cudaPitchedPtr { void* ptr; size_t pitch; size_t xsize; size_t ysize; };

/* Textures and surfaces (the data they return is unknown to kernlint anyway). */
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;
template <class T> __device__ T tex1Dfetch(cudaTextureObject_t, int);
template <class T> __device__ T tex1D(cudaTextureObject_t, float);
template <class T> __device__ T tex2D(cudaTextureObject_t, float, float);
template <class T> __device__ T tex3D(cudaTextureObject_t, float, float, float);
template <class T> __device__ void surf2Dwrite(T, cudaSurfaceObject_t, int, int);
template <class T> __device__ T tex2DLod(cudaTextureObject_t, float, float, float);
template <class T> __device__ T tex2DLayered(cudaTextureObject_t, float, float, int);
template <class T> __device__ T texCubemap(cudaTextureObject_t, float, float, float);
template <class T> __device__ T surf2Dread(cudaSurfaceObject_t, int, int);
template <class T> __device__ void surf2Dread(T*, cudaSurfaceObject_t, int, int);
template <class T> __device__ void surf1Dwrite(T, cudaSurfaceObject_t, int);
template <class T> __device__ void surf3Dwrite(T, cudaSurfaceObject_t, int, int, int);
template <class T> __device__ void surf2DLayeredwrite(T, cudaSurfaceObject_t, int, int, int);
__device__ unsigned int __cvta_generic_to_shared(const void*);
__device__ void __pipeline_commit();
__device__ void __pipeline_wait_prior(int);
__device__ void __pipeline_memcpy_async(void*, const void*, size_t, size_t = 0);
__device__ float __shfl_sync(unsigned int, float, int, int);
__device__ __half __hadd(__half, __half); __device__ __half __hmul(__half, __half);
__device__ __half2 __hadd2(__half2, __half2); __device__ __half2 __hmul2(__half2, __half2);
__device__ __half2 __float2half2_rn(float); __device__ float2 __half22float2(__half2);
__device__ __half __hfma(__half, __half, __half); __device__ __half2 __hfma2(__half2, __half2, __half2);
__device__ __half __hsub(__half, __half); __device__ __half2 __hsub2(__half2, __half2);
__device__ __half __hdiv(__half, __half); __device__ __half2 __h2div(__half2, __half2);
__device__ __half2 __halves2half2(__half, __half); __device__ __half __low2half(__half2); __device__ __half __high2half(__half2);
__device__ __half2 __half2half2(__half); __device__ __half __hmax(__half, __half); __device__ __half __hmin(__half, __half);
__device__ __half2 __floats2half2_rn(float, float); __device__ float __low2float(__half2); __device__ float __high2float(__half2);
__device__ __half2 __float22half2_rn(float2);
/* cuda_bf16.h's counterparts on __nv_bfloat16 / __nv_bfloat162 (CUDA Math API, "Bfloat16 Precision Intrinsics"). */
__device__ __nv_bfloat162 __float2bfloat162_rn(float); __device__ float2 __bfloat1622float2(__nv_bfloat162);
__device__ __nv_bfloat162 __floats2bfloat162_rn(float, float); __device__ __nv_bfloat162 __float22bfloat162_rn(float2);
__device__ __nv_bfloat162 __halves2bfloat162(__nv_bfloat16, __nv_bfloat16); __device__ __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16);
__device__ __nv_bfloat16 __low2bfloat16(__nv_bfloat162); __device__ __nv_bfloat16 __high2bfloat16(__nv_bfloat162);
__device__ float __low2float(__nv_bfloat162); __device__ float __high2float(__nv_bfloat162);
__device__ __nv_bfloat16 __hadd(__nv_bfloat16, __nv_bfloat16); __device__ __nv_bfloat16 __hmul(__nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat16 __hsub(__nv_bfloat16, __nv_bfloat16); __device__ __nv_bfloat16 __hfma(__nv_bfloat16, __nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat16 __hmax(__nv_bfloat16, __nv_bfloat16); __device__ __nv_bfloat16 __hmin(__nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat162 __hadd2(__nv_bfloat162, __nv_bfloat162); __device__ __nv_bfloat162 __hmul2(__nv_bfloat162, __nv_bfloat162);
__device__ __nv_bfloat162 __hsub2(__nv_bfloat162, __nv_bfloat162); __device__ __nv_bfloat162 __hfma2(__nv_bfloat162, __nv_bfloat162, __nv_bfloat162);

namespace std {
// The standard library is never on kernlint's include path (-nostdinc): the few compile-time pieces
// that kernel traits classes compute their members with (`std::conditional_t<!kIsComplex, float2,
// float4>`, `std::is_same_v<weight_t, float>`, `std::min(8, kNItems)` in a constant) are declared
// here as C++17 [meta.rel], [meta.trans.other], [alg.min.max] and [support.initlist] specify them.
template <class T> __host__ __device__ T min(T a, T b);
template <class T> __host__ __device__ T max(T a, T b);
template <class E> class initializer_list {
  const E* b_; size_t n_;
  constexpr initializer_list(const E* b, size_t n) : b_(b), n_(n) {}
public:
  constexpr initializer_list() : b_(nullptr), n_(0) {}
  constexpr size_t size() const { return n_; }
  constexpr const E* begin() const { return b_; }
  constexpr const E* end() const { return b_ + n_; }
};
template <class T> constexpr __host__ __device__ T min(initializer_list<T> l) {
  const T* r = l.begin(); for (const T* p = l.begin(); p != l.end(); ++p) if (*p < *r) r = p; return *r; }
template <class T> constexpr __host__ __device__ T max(initializer_list<T> l) {
  const T* r = l.begin(); for (const T* p = l.begin(); p != l.end(); ++p) if (*r < *p) r = p; return *r; }
// <type_traits> (C++17 [meta]): device code picks types and values with it (`std::conditional_t<
// std::is_same_v<T, half>, half2, float2>`, tag arguments `std::integral_constant<int, 4>{}`); each
// definition is the standard's one-line partial specialisation. Declared in every translation unit,
// whether it includes the header or reaches it through a missing one (a missing #include is read as
// an empty file): without them every type built from them, and every access through it, was unknown.
#ifndef KERNLINT_KNOWN_TYPE_TRAITS
#define KERNLINT_KNOWN_TYPE_TRAITS
template <class T, T v> struct integral_constant {
  static constexpr T value = v;
  using value_type = T;
  using type = integral_constant;
  constexpr operator value_type() const noexcept { return value; }
  constexpr value_type operator()() const noexcept { return value; }
};
template <bool B> using bool_constant = integral_constant<bool, B>;
using true_type = bool_constant<true>;
using false_type = bool_constant<false>;
template <class T, class U> struct is_same : false_type {};
template <class T> struct is_same<T, T> : true_type {};
template <class T, class U> inline constexpr bool is_same_v = is_same<T, U>::value;
template <bool B, class T, class F> struct conditional { using type = T; };
template <class T, class F> struct conditional<false, T, F> { using type = F; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { using type = T; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <class T> struct remove_const { using type = T; };
template <class T> struct remove_const<const T> { using type = T; };
template <class T> using remove_const_t = typename remove_const<T>::type;
template <class T> struct remove_volatile { using type = T; };
template <class T> struct remove_volatile<volatile T> { using type = T; };
template <class T> using remove_volatile_t = typename remove_volatile<T>::type;
template <class T> struct remove_cv { using type = typename remove_volatile<typename remove_const<T>::type>::type; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> struct remove_reference { using type = T; };
template <class T> struct remove_reference<T&> { using type = T; };
template <class T> struct remove_reference<T&&> { using type = T; };
template <class T> using remove_reference_t = typename remove_reference<T>::type;
template <class T> struct remove_pointer { using type = T; };
template <class T> struct remove_pointer<T*> { using type = T; };
template <class T> struct remove_pointer<T* const> { using type = T; };
template <class T> using remove_pointer_t = typename remove_pointer<T>::type;
template <class T> struct is_pointer : false_type {};
template <class T> struct is_pointer<T*> : true_type {};
template <class T> struct is_pointer<T* const> : true_type {};
template <class T> inline constexpr bool is_pointer_v = is_pointer<T>::value;
template <class T> struct is_const : false_type {};
template <class T> struct is_const<const T> : true_type {};
template <class T> inline constexpr bool is_const_v = is_const<T>::value;
#endif
}
#endif
