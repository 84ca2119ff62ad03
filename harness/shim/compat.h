// Every difference between the libtorch releases devcheck builds against (2.0
// for tch 0.13 through 2.13 for tch 0.26) lives here, behind names the rest of
// the shim uses unchanged. The switch is libtorch's own version, from
// <torch/version.h>; build.rs reads the same numbers for the Rust side's
// `torch_2_N` cfgs.
//
// What an older libtorch cannot give is an error string naming the version
// that would, never a made-up value: the Rust side reports it as unavailable.
#pragma once

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/detail/MPSHooksInterface.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <c10/util/Optional.h>
#include <torch/version.h>

#define DEVCHECK_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||           \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if DEVCHECK_TORCH_AT_LEAST(2, 9)
#include <c10/core/CachingDeviceAllocator.h>
#endif

namespace devcheck_shim {

// The optional of kernel signatures: c10's own class before libtorch 2.2, an
// alias of std::optional since. A registered kernel must use the exact type.
template <typename T>
using optional = c10::optional<T>;

// Whether the backend was compiled into this libtorch (its device guard is
// registered when its library loads; true for CUDA only once libtorch_cuda is in).
inline bool backend_built(c10::DeviceType type) {
  return c10::impl::hasDeviceGuardImpl(type);
}

// Whether a CUDA device can be used. Never `at::getAccelerator()`: it aborts on
// a CUDA build whose host has no driver.
inline bool cuda_available() {
  return at::detail::getCUDAHooks().hasCUDA();
}

inline bool mps_available() {
  return at::detail::getMPSHooks().hasMPS();
}

inline void cuda_synchronize(c10::DeviceIndex index) {
  at::detail::getCUDAHooks().deviceSynchronize(index);
}

// What the CUDA caching allocator counts, in bytes.
struct AllocatorStats {
  int64_t allocated_current;
  int64_t allocated_peak;
  int64_t reserved_current;
  int64_t reserved_peak;
};

#if DEVCHECK_TORCH_AT_LEAST(2, 9)
inline AllocatorStats cuda_allocator_stats(c10::DeviceIndex index) {
  auto stats = c10::getDeviceAllocator(c10::DeviceType::CUDA)->getDeviceStats(index);
  constexpr auto all = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  return AllocatorStats{
      stats.allocated_bytes[all].current, stats.allocated_bytes[all].peak,
      stats.reserved_bytes[all].current, stats.reserved_bytes[all].peak};
}

inline void cuda_reset_peak(c10::DeviceIndex index) {
  c10::getDeviceAllocator(c10::DeviceType::CUDA)->resetPeakStats(index);
}

inline void cuda_empty_cache() {
  c10::getDeviceAllocator(c10::DeviceType::CUDA)->emptyCache();
}
#else
// Before 2.9 the allocator is reachable only through c10/cuda headers, which
// need CUDA's own headers (the pip wheels do not ship them): the memory check
// measures CUDA through the tensor-memory tracker instead.
constexpr const char* kNoAllocatorStats =
    "CUDA allocator statistics need libtorch 2.9 or newer (tch 0.22 or newer); this is libtorch " TORCH_VERSION;

inline AllocatorStats cuda_allocator_stats(c10::DeviceIndex) {
  TORCH_CHECK(false, kNoAllocatorStats);
}

inline void cuda_reset_peak(c10::DeviceIndex) {
  TORCH_CHECK(false, kNoAllocatorStats);
}

inline void cuda_empty_cache() {
  TORCH_CHECK(false, kNoAllocatorStats);
}
#endif

// Milliseconds between two recorded device events, waiting for the second.
inline double event_elapsed_ms(c10::Event& first, c10::Event& last) {
#if DEVCHECK_TORCH_AT_LEAST(2, 4)
  last.synchronize();
  return first.elapsedTime(last);
#else
  (void)first;
  (void)last;
  TORCH_CHECK(false, "device event timing needs libtorch 2.4 or newer (tch 0.17 or newer); this is libtorch " TORCH_VERSION);
#endif
}

// TF32 settings: per backend and op since libtorch 2.9 (named by strings in
// 2.9, by enums since 2.10), two switches before.
struct Tf32Flags {
  bool matmul;
  bool conv;
  bool rnn;
};

inline Tf32Flags tf32_flags() {
  auto& context = at::globalContext();
#if DEVCHECK_TORCH_AT_LEAST(2, 10)
  auto tf32 = [&](at::Float32Op op) {
    return context.float32Precision(at::Float32Backend::CUDA, op) == at::Float32Precision::TF32;
  };
  return Tf32Flags{tf32(at::Float32Op::MATMUL), tf32(at::Float32Op::CONV), tf32(at::Float32Op::RNN)};
#elif DEVCHECK_TORCH_AT_LEAST(2, 9)
  auto tf32 = [&](const char* backend, const char* op) {
    return context.float32Precision(backend, op) == "tf32";
  };
  return Tf32Flags{tf32("cuda", "matmul"), tf32("cuda", "conv"), tf32("cuda", "rnn")};
#else
  // cuDNN's one switch covers both its convolutions and its RNNs.
  return Tf32Flags{context.allowTF32CuBLAS(), context.allowTF32CuDNN(), context.allowTF32CuDNN()};
#endif
}

}  // namespace devcheck_shim
