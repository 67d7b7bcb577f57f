// The slot-mapping scatter and the log-sum-exp merge (verify_kernels.h). Both kernels give one
// warp one unit of work (a token, a query head) in a grid-stride loop: a token's row and a head's
// value vector are contiguous, so the warp's loads and stores are coalesced.
#include <algorithm>
#include <cmath>
#include <string>

#include "verify_kernels.h"

namespace kvtopo::gpu {
namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int kWarpsPerBlock = kThreadsPerBlock / 32;
constexpr int kBlocksPerSm = 16;  // enough resident warps to hide memory latency
constexpr unsigned kFullMask = 0xffffffffu;

// A SlotLayout with the quantities every position needs, computed once on the host.
struct DeviceLayout {
  int64_t num_shards;     // n
  int64_t interleave;     // I (1 when n = 1: every position is local)
  int64_t block_size;     // b, the kernel block size
  int64_t slice;          // the slice this rank holds: rank mod n
  int64_t stripe;         // n * I: one round of the round-robin
  int64_t virtual_block;  // b * n: global positions one block-table column covers
};

// The slot of position p on the layout's rank, -1 when another rank holds it; on an error, -1
// and the error's bit in *error_bits. The device restatement of ComputeSlotMapping's striping
// rule (kvtopo/slot_mapping.h); verify_kernels_check.cu is its oracle, slot for slot.
__host__ __device__ inline int64_t SlotOf(const DeviceLayout& layout, const int32_t* kernel_row,
                                          int64_t row_length, int64_t arena_slots, int64_t p,
                                          uint32_t* error_bits) {
  if (p < 0) {
    *error_bits = kNegativePosition;
    return -1;
  }
  const int64_t column = p / layout.virtual_block;
  if (column >= row_length) {
    *error_bits = kPositionPastRow;
    return -1;
  }
  if ((p / layout.interleave) % layout.num_shards != layout.slice) return -1;
  const int64_t o = p - column * layout.virtual_block;
  const int64_t local_offset = (o / layout.stripe) * layout.interleave + o % layout.interleave;
  const int64_t slot = static_cast<int64_t>(kernel_row[column]) * layout.block_size + local_offset;
  if (slot < 0 || slot >= arena_slots) {
    *error_bits = kSlotOutsideArena;
    return -1;
  }
  return slot;
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    ScatterKernel(DeviceLayout layout, const int32_t* __restrict__ kernel_row, int64_t row_length,
                  const int64_t* __restrict__ positions, int64_t num_positions,
                  const float* __restrict__ kv_rows, int64_t row_floats, bool vectorized,
                  float* __restrict__ arena, int64_t arena_slots, int64_t* __restrict__ slots,
                  ScatterStatus* status) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t first_warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t num_warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t i = first_warp; i < num_positions; i += num_warps) {
    // Every lane computes the same slot from the same (broadcast) loads.
    uint32_t error_bits = 0;
    const int64_t slot =
        SlotOf(layout, kernel_row, row_length, arena_slots, positions[i], &error_bits);
    if (lane == 0) {
      slots[i] = slot;
      if (error_bits != 0) {
        atomicMin(&status->first_error_index, static_cast<unsigned long long>(i));
        atomicOr(&status->error_bits, error_bits);
      }
    }
    if (slot < 0) continue;
    const float* src = kv_rows + i * row_floats;
    float* dst = arena + slot * row_floats;
    if (vectorized) {
      const float4* src4 = reinterpret_cast<const float4*>(src);
      float4* dst4 = reinterpret_cast<float4*>(dst);
      for (int64_t k = lane; k < row_floats / 4; k += 32) dst4[k] = src4[k];
    } else {
      for (int64_t k = lane; k < row_floats; k += 32) dst[k] = src[k];
    }
  }
}

__device__ inline float WarpMax(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  }
  return v;
}

__device__ inline float WarpSum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// One warp per (query, head): the largest LSE, each rank's weight exp(lse_r - max) in shared
// memory, then each lane's value entries summed over ranks in rank order.
__global__ void __launch_bounds__(kThreadsPerBlock)
    MergeKernel(int64_t num_ranks, int64_t num_items, int64_t value_dim, int64_t rank_stride,
                const float* __restrict__ partials, float* __restrict__ out) {
  extern __shared__ float shared_weights[];
  float* weights = shared_weights + (threadIdx.x / 32) * num_ranks;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t first_warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t num_warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  const int64_t item_floats = value_dim + 1;
  for (int64_t item = first_warp; item < num_items; item += num_warps) {
    const float* in = partials + item * item_floats;
    float* o = out + item * item_floats;
    float lse_max = -INFINITY;
    for (int64_t r = lane; r < num_ranks; r += 32) {
      lse_max = fmaxf(lse_max, in[r * rank_stride + value_dim]);
    }
    lse_max = WarpMax(lse_max);
    if (lse_max == -INFINITY) {
      // Every range is empty: the merge identity.
      for (int64_t k = lane; k < value_dim; k += 32) o[k] = 0.0f;
      if (lane == 0) o[value_dim] = -INFINITY;
      continue;
    }
    float weight_sum = 0.0f;
    for (int64_t r = lane; r < num_ranks; r += 32) {
      const float w = expf(in[r * rank_stride + value_dim] - lse_max);
      weights[r] = w;
      weight_sum += w;
    }
    weight_sum = WarpSum(weight_sum);
    __syncwarp();
    for (int64_t k = lane; k < value_dim; k += 32) {
      float acc = 0.0f;
      for (int64_t r = 0; r < num_ranks; ++r) acc += weights[r] * in[r * rank_stride + k];
      o[k] = acc / weight_sum;
    }
    if (lane == 0) o[value_dim] = lse_max + logf(weight_sum);
    __syncwarp();  // the next item overwrites the weights
  }
}

// nvcc compiles this file, so messages are built without fmt.
Status CudaError(const char* what, cudaError_t error) {
  return Internal(std::string(what) + ": " + cudaGetErrorString(error) + " (" +
                  cudaGetErrorName(error) + ")");
}

std::string Named(const char* name, int64_t value) {
  return std::string(name) + "=" + std::to_string(value);
}

Result<int> GridSize(int64_t num_warps_of_work) {
  int device = 0;
  cudaError_t error = cudaGetDevice(&device);
  if (error != cudaSuccess) return CudaError("cudaGetDevice", error);
  int num_sms = 0;
  error = cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device);
  if (error != cudaSuccess) return CudaError("cudaDeviceGetAttribute", error);
  const int64_t wanted = (num_warps_of_work + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<int>(std::min<int64_t>(wanted, int64_t{num_sms} * kBlocksPerSm));
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

Status ScatterKvRows(const ScatterArgs& args, cudaStream_t stream) {
  const SlotLayout& l = args.layout;
  if (l.num_shards < 1 || l.interleave < 1 || l.kernel_block_size < 1 || l.rank.value() < 0 ||
      (l.num_shards > 1 && l.kernel_block_size % l.interleave != 0)) {
    return InvalidArgument("slot layout " + Named("num_shards", l.num_shards) + " " +
                           Named("interleave", l.interleave) + " " +
                           Named("kernel_block_size", l.kernel_block_size) + " " +
                           Named("rank", l.rank.value()) +
                           ": shards, interleave and kernel block must be >= 1, the rank >= 0, "
                           "and the interleave must divide the kernel block when positions are "
                           "sharded");
  }
  if (args.row_length < 0 || args.num_positions < 0 || args.row_floats < 1 ||
      args.arena_slots < 0) {
    return InvalidArgument("scatter sizes " + Named("row_length", args.row_length) + " " +
                           Named("num_positions", args.num_positions) + " " +
                           Named("row_floats", args.row_floats) + " " +
                           Named("arena_slots", args.arena_slots) +
                           ": row_floats must be >= 1 and the others >= 0");
  }
  if (args.status == nullptr ||
      (args.num_positions > 0 &&
       (args.positions == nullptr || args.kv_rows == nullptr || args.slots == nullptr ||
        (args.row_length > 0 && args.kernel_row == nullptr) ||
        (args.arena_slots > 0 && args.arena == nullptr)))) {
    return InvalidArgument("scatter: a device pointer the sizes need is null");
  }
  cudaError_t error =
      cudaMemsetAsync(&args.status->first_error_index, 0xff, sizeof(unsigned long long), stream);
  if (error == cudaSuccess) {
    error = cudaMemsetAsync(&args.status->error_bits, 0, sizeof(uint32_t), stream);
  }
  if (error != cudaSuccess) return CudaError("scatter: resetting the status", error);
  if (args.num_positions == 0) return Status::Ok();

  DeviceLayout layout;
  layout.num_shards = l.num_shards;
  layout.interleave = l.num_shards == 1 ? 1 : l.interleave;
  layout.block_size = l.kernel_block_size;
  layout.slice = l.rank.value() % l.num_shards;
  layout.stripe = layout.num_shards * layout.interleave;
  layout.virtual_block = layout.block_size * layout.num_shards;
  const bool vectorized = args.row_floats % 4 == 0 && Aligned16(args.kv_rows) &&
                          (args.arena == nullptr || Aligned16(args.arena));
  KVTOPO_ASSIGN_OR_RETURN(const int blocks, GridSize(args.num_positions));
  ScatterKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(
      layout, args.kernel_row, args.row_length, args.positions, args.num_positions, args.kv_rows,
      args.row_floats, vectorized, args.arena, args.arena_slots, args.slots, args.status);
  error = cudaGetLastError();
  if (error != cudaSuccess) return CudaError("scatter: launching the kernel", error);
  return Status::Ok();
}

Status MergePartials(const MergeArgs& args, cudaStream_t stream) {
  if (args.num_ranks < 1 || args.num_ranks > kMaxMergeRanks || args.num_queries < 0 ||
      args.num_query_heads < 1 || args.value_dim < 1) {
    return InvalidArgument("merge sizes " + Named("num_ranks", args.num_ranks) + " " +
                           Named("num_queries", args.num_queries) + " " +
                           Named("num_query_heads", args.num_query_heads) + " " +
                           Named("value_dim", args.value_dim) + ": ranks must be in [1, " +
                           std::to_string(kMaxMergeRanks) +
                           "], queries >= 0, heads and value_dim >= 1");
  }
  const int64_t num_items = args.num_queries * args.num_query_heads;
  if (num_items == 0) return Status::Ok();
  if (args.partials == nullptr || args.out == nullptr) {
    return InvalidArgument("merge: a device pointer is null");
  }
  KVTOPO_ASSIGN_OR_RETURN(const int blocks, GridSize(num_items));
  const size_t shared_bytes = sizeof(float) * kWarpsPerBlock * args.num_ranks;
  MergeKernel<<<blocks, kThreadsPerBlock, shared_bytes, stream>>>(
      args.num_ranks, num_items, args.value_dim, num_items * (args.value_dim + 1), args.partials,
      args.out);
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) return CudaError("merge: launching the kernel", error);
  return Status::Ok();
}

}  // namespace kvtopo::gpu
