"""The stub for a missing CUB header: block load/store modelled as the global accesses CUB documents.

Kernels of real projects (selective scan, quantisers) move their data through
`cub::BlockLoad<T, BLOCK_THREADS, ITEMS_PER_THREAD, ALGORITHM>(temp_storage).Load(ptr, items)` and
`cub::BlockStore<...>(temp_storage).Store(ptr, items)`. Without CUB (kernlint has no CUDA toolkit)
those calls resolve to nothing and their accesses go unevaluated. The stub below declares the types
and, for `Load`/`Store`, a body that makes the global accesses of the chosen algorithm as CUB's own
documentation defines them (CUB API docs, enums `cub::BlockLoadAlgorithm` and
`cub::BlockStoreAlgorithm`, and the "blocked", "striped" and "warp-striped" arrangements of
`cub::LoadDirectBlocked`, `cub::LoadDirectStriped`, `cub::LoadDirectWarpStriped` and their Store twins):

- `*_DIRECT`: blocked: thread t reads/writes items `ptr[t * ITEMS_PER_THREAD + i]`.
- `*_STRIPED`, `*_TRANSPOSE`: striped: item i of thread t is `ptr[i * BLOCK_THREADS + t]`.
- `*_WARP_TRANSPOSE(_TIMESLICED)`: warp-striped: warp w owns the `32 * ITEMS_PER_THREAD` items from
  `w * 32 * ITEMS_PER_THREAD`, lane l reads item i at `+ i * 32 + l`.
- With `valid_items`, only indices below it are accessed (CUB's guarded variants compare the same
  index); `oob_default` is what the others get.
- `*_VECTORIZE`: blocked, but read as vectors when the pointer is aligned and the type primitive,
  else as DIRECT: which one a launch takes depends on the pointer's alignment at run time, which
  kernlint does not know, so it is not modelled: the call is an access seen and not evaluated
  (`cub::LoadVectorized` / `cub::StoreVectorized`, body-less, counted by eval/library_calls.py).

The transposing variants also exchange the items through `temp_storage` in shared memory; that
exchange is CUB's internal business (its padding and timeslicing choices avoid the bank conflicts a
naive model would invent), so it is not modelled: only the global accesses are.

`TempStorage` is a struct with a zero-length array: kernlint does not claim its size (CUB's real one is
internal, a function of the algorithm and the architecture), and a size of 0 is what kernlint's own
`sizeof` of a dependent type reads as unknown. A `sizeof` clang folds itself (a `static constexpr`
member of a concrete traits class: `smem_ + Ktraits::kSmemSize`) reads 0, so offsets past CUB's storage
shift by a constant; bank conflicts between 4-byte word accesses of one array do not depend on such a
shift (every word moves to the bank `shift / 4` further), so findings there rest on the kernel's own
indexing.

`thread t` is CUB's linear thread id (RowMajorTid: x + y * BLOCK_DIM_X + z * BLOCK_DIM_X *
BLOCK_DIM_Y, the y and z terms only when those dimensions exceed 1).

The `Load`/`Store` overloads take `const T*`/`T*`, not CUB's any-iterator template: kernlint evaluates
members of class templates, not member templates. A pointer of another element type than T (rare) does
not convert, and clang then leaves the call unresolved: KL904, not a guess.

`cub::BlockReduce`, `cub::BlockScan`, `cub::WarpReduce`, `cub::BlockExchange` are declared so that kernels
using them parse; their methods have no body: results are unknown values, and their shared-memory
traffic (CUB-internal) is not modelled. A scan's output parameter is assigned an unknown value.
"""
from __future__ import annotations

CUB = """\
#ifndef KERNLINT_KNOWN_CUB
#define KERNLINT_KNOWN_CUB
namespace cub {
enum BlockLoadAlgorithm { BLOCK_LOAD_DIRECT, BLOCK_LOAD_STRIPED, BLOCK_LOAD_VECTORIZE, BLOCK_LOAD_TRANSPOSE,
                          BLOCK_LOAD_WARP_TRANSPOSE, BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED };
enum BlockStoreAlgorithm { BLOCK_STORE_DIRECT, BLOCK_STORE_STRIPED, BLOCK_STORE_VECTORIZE, BLOCK_STORE_TRANSPOSE,
                           BLOCK_STORE_WARP_TRANSPOSE, BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED };
enum BlockReduceAlgorithm { BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS };
enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

struct NullType {};
__device__ void LoadVectorized(NullType &vectorized, const void *ptr);
__device__ void StoreVectorized(NullType &vectorized, void *ptr);

// (kernlint evaluates no call of an overload from another inside a class template: each body is whole)
#define KERNLINT_CUB_TID ((BLOCK_DIM_Z == 1 ? 0 : threadIdx.z * BLOCK_DIM_X * BLOCK_DIM_Y) \
                          + (BLOCK_DIM_Y == 1 ? 0 : threadIdx.y * BLOCK_DIM_X) + threadIdx.x)
#define KERNLINT_CUB_INDEX(DIRECT, WARP_STRIPED, WARP_STRIPED_TIMESLICED) \
  (ALGORITHM == DIRECT ? t * ITEMS_PER_THREAD + i \
   : ALGORITHM == WARP_STRIPED || ALGORITHM == WARP_STRIPED_TIMESLICED \
       ? (t / 32) * (32 * ITEMS_PER_THREAD) + i * 32 + t % 32 \
       : i * (BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z) + t)
#define KERNLINT_CUB_LOAD_INDEX \
  KERNLINT_CUB_INDEX(BLOCK_LOAD_DIRECT, BLOCK_LOAD_WARP_TRANSPOSE, BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED)
#define KERNLINT_CUB_STORE_INDEX \
  KERNLINT_CUB_INDEX(BLOCK_STORE_DIRECT, BLOCK_STORE_WARP_TRANSPOSE, BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED)

template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockLoadAlgorithm ALGORITHM = BLOCK_LOAD_DIRECT,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockLoad {
public:
  struct TempStorage { unsigned char layout_unknown[0]; };
  __device__ BlockLoad() {}
  __device__ BlockLoad(TempStorage &temp_storage) {}
  __device__ void Load(const T *ptr, T (&items)[ITEMS_PER_THREAD]) {
    if (ALGORITHM == BLOCK_LOAD_VECTORIZE) {
      NullType vectorized;
      LoadVectorized(vectorized, (const void *)ptr);
    } else {
      int t = KERNLINT_CUB_TID;
      for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        items[i] = ptr[KERNLINT_CUB_LOAD_INDEX];
      }
    }
  }
  __device__ void Load(const T *ptr, T (&items)[ITEMS_PER_THREAD], int valid_items) {
    if (ALGORITHM == BLOCK_LOAD_VECTORIZE) {
      NullType vectorized;
      LoadVectorized(vectorized, (const void *)ptr);
    } else {
      int t = KERNLINT_CUB_TID;
      for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        int idx = KERNLINT_CUB_LOAD_INDEX;
        if (idx < valid_items) {
          items[i] = ptr[idx];
        }
      }
    }
  }
  __device__ void Load(const T *ptr, T (&items)[ITEMS_PER_THREAD], int valid_items, T oob_default) {
    if (ALGORITHM == BLOCK_LOAD_VECTORIZE) {
      NullType vectorized;
      LoadVectorized(vectorized, (const void *)ptr);
    } else {
      int t = KERNLINT_CUB_TID;
      for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        int idx = KERNLINT_CUB_LOAD_INDEX;
        items[i] = oob_default;
        if (idx < valid_items) {
          items[i] = ptr[idx];
        }
      }
    }
  }
};

template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockStoreAlgorithm ALGORITHM = BLOCK_STORE_DIRECT,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockStore {
public:
  struct TempStorage { unsigned char layout_unknown[0]; };
  __device__ BlockStore() {}
  __device__ BlockStore(TempStorage &temp_storage) {}
  __device__ void Store(T *ptr, T (&items)[ITEMS_PER_THREAD]) {
    if (ALGORITHM == BLOCK_STORE_VECTORIZE) {
      NullType vectorized;
      StoreVectorized(vectorized, (void *)ptr);
    } else {
      int t = KERNLINT_CUB_TID;
      for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        ptr[KERNLINT_CUB_STORE_INDEX] = items[i];
      }
    }
  }
  __device__ void Store(T *ptr, T (&items)[ITEMS_PER_THREAD], int valid_items) {
    if (ALGORITHM == BLOCK_STORE_VECTORIZE) {
      NullType vectorized;
      StoreVectorized(vectorized, (void *)ptr);
    } else {
      int t = KERNLINT_CUB_TID;
      for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        int idx = KERNLINT_CUB_STORE_INDEX;
        if (idx < valid_items) {
          ptr[idx] = items[i];
        }
      }
    }
  }
};

template <typename T, int BLOCK_DIM_X, BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockReduce {
public:
  struct TempStorage { unsigned char layout_unknown[0]; };
  __device__ BlockReduce() {}
  __device__ BlockReduce(TempStorage &temp_storage) {}
  __device__ T Sum(T input);
  __device__ T Sum(T input, int num_valid);
  template <int N> __device__ T Sum(T (&inputs)[N]);
  template <typename ReductionOp> __device__ T Reduce(T input, ReductionOp op);
  template <typename ReductionOp> __device__ T Reduce(T input, ReductionOp op, int num_valid);
  template <int N, typename ReductionOp> __device__ T Reduce(T (&inputs)[N], ReductionOp op);
};

template <typename T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockScan {
public:
  struct TempStorage { unsigned char layout_unknown[0]; };
  __device__ BlockScan() {}
  __device__ BlockScan(TempStorage &temp_storage) {}
  __device__ T BlockScanResult(T input);
  __device__ void InclusiveSum(T input, T &output) { output = BlockScanResult(input); }
  __device__ void InclusiveSum(T input, T &output, T &block_aggregate) {
    output = BlockScanResult(input);
    block_aggregate = BlockScanResult(input);
  }
  __device__ void ExclusiveSum(T input, T &output) { output = BlockScanResult(input); }
  __device__ void ExclusiveSum(T input, T &output, T &block_aggregate) {
    output = BlockScanResult(input);
    block_aggregate = BlockScanResult(input);
  }
  template <typename ScanOp> __device__ void InclusiveScan(T input, T &output, ScanOp op);
  template <typename ScanOp, typename PrefixOp>
  __device__ void InclusiveScan(T input, T &output, ScanOp op, PrefixOp &prefix_op);
  template <typename ScanOp> __device__ void ExclusiveScan(T input, T &output, T initial, ScanOp op);
  template <typename ScanOp> __device__ void ExclusiveScan(T input, T &output, ScanOp op);
};

template <typename T, int LOGICAL_WARP_THREADS = 32>
class WarpReduce {
public:
  struct TempStorage { unsigned char layout_unknown[0]; };
  __device__ WarpReduce(TempStorage &temp_storage) {}
  __device__ T Sum(T input);
  __device__ T Sum(T input, int valid_items);
  template <typename ReductionOp> __device__ T Reduce(T input, ReductionOp op);
  template <typename ReductionOp> __device__ T Reduce(T input, ReductionOp op, int valid_items);
};

template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, bool WARP_TIME_SLICING = false,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockExchange {
public:
  struct TempStorage { unsigned char layout_unknown[0]; };
  __device__ BlockExchange() {}
  __device__ BlockExchange(TempStorage &temp_storage) {}
  template <typename OutputT> __device__ void BlockedToStriped(T (&input)[ITEMS_PER_THREAD], OutputT (&output)[ITEMS_PER_THREAD]);
  template <typename OutputT> __device__ void StripedToBlocked(T (&input)[ITEMS_PER_THREAD], OutputT (&output)[ITEMS_PER_THREAD]);
  template <typename OutputT> __device__ void BlockedToWarpStriped(T (&input)[ITEMS_PER_THREAD], OutputT (&output)[ITEMS_PER_THREAD]);
  template <typename OutputT> __device__ void WarpStripedToBlocked(T (&input)[ITEMS_PER_THREAD], OutputT (&output)[ITEMS_PER_THREAD]);
};

// Building blocks a project's own block-wide algorithms use (a reverse scan written after CUB's):
// cub/util_type.cuh `Uninitialized<T>` (storage to alias T in a union; its `Alias()` is T), `Log2<N>`
// (ceil(log2 N)); cub/util_ptx.cuh `RowMajorTid`, `WarpMask`, `ShuffleIndex`, `ShuffleDown` (values of
// registers: results unknown); cub/block/block_raking_layout.cuh `BlockRakingLayout`, whose constants
// follow CUB's definitions (with 32-thread warps) and whose grid is CUB's internal layout (its pointers
// are unknown: the accesses through them are not evaluated). Their storage, like every TempStorage here,
// has no size kernlint claims.
template <typename T> struct Uninitialized {
  unsigned char layout_unknown[0];
  __device__ T &Alias();
};
template <int N> struct Log2 { static constexpr int VALUE = N <= 1 ? 0 : 1 + Log2<(N + 1) / 2>::VALUE; };
template <> struct Log2<1> { static constexpr int VALUE = 0; };
template <> struct Log2<0> { static constexpr int VALUE = 0; };
__device__ inline unsigned int RowMajorTid(int block_dim_x, int block_dim_y, int block_dim_z) {
  return (block_dim_z == 1 ? 0 : threadIdx.z * block_dim_x * block_dim_y)
       + (block_dim_y == 1 ? 0 : threadIdx.y * block_dim_x) + threadIdx.x;
}
template <int LOGICAL_WARP_THREADS> __device__ unsigned int WarpMask(unsigned int warp_id);
template <int LOGICAL_WARP_THREADS, typename T> __device__ T ShuffleIndex(T input, int src_lane, unsigned int member_mask);
template <int LOGICAL_WARP_THREADS, typename T>
__device__ T ShuffleDown(T input, int src_offset, int last_thread, unsigned int member_mask);
template <int LOGICAL_WARP_THREADS, typename T>
__device__ T ShuffleUp(T input, int src_offset, int first_thread, unsigned int member_mask);
template <typename T, int BLOCK_THREADS, int LEGACY_PTX_ARCH = 0>
struct BlockRakingLayout {
  static constexpr int SHARED_ELEMENTS = BLOCK_THREADS;
  static constexpr int MAX_RAKING_THREADS = BLOCK_THREADS < 32 ? BLOCK_THREADS : 32;
  static constexpr int SEGMENT_LENGTH = (SHARED_ELEMENTS + MAX_RAKING_THREADS - 1) / MAX_RAKING_THREADS;
  static constexpr int RAKING_THREADS = (SHARED_ELEMENTS + SEGMENT_LENGTH - 1) / SEGMENT_LENGTH;
  static constexpr bool UNGUARDED = (SHARED_ELEMENTS % RAKING_THREADS == 0);
  struct TempStorage { unsigned char layout_unknown[0]; };
  static __device__ T *PlacementPtr(TempStorage &temp_storage, unsigned int linear_tid);
  static __device__ T *RakingPtr(TempStorage &temp_storage, unsigned int linear_tid);
};

struct Sum {
  template <typename T> __device__ T operator()(const T &a, const T &b) const { return a + b; }
};
struct Max {
  template <typename T> __device__ T operator()(const T &a, const T &b) const { return a < b ? b : a; }
};
struct Min {
  template <typename T> __device__ T operator()(const T &a, const T &b) const { return b < a ? b : a; }
};
}  // namespace cub
#endif
"""


def is_cub(name: str) -> bool:
    """Whether a missing include, as written, is one of CUB's headers (`cub/cub.cuh`,
    `cub/block/block_load.cuh`): every one of them gets the whole stub (once: it has a guard)."""
    return name.replace("\\", "/").startswith("cub/")


def is_cub_stub(path: str) -> bool:
    """Whether `path` (under the stub directory) is a CUB stub, whose definitions kernlint lowers."""
    return "/cub/" in path.replace("\\", "/")
