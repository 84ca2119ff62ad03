// The devcheck shim: device synchronize, memory statistics, device events,
// CUDA sync-debug mode and warning capture, none of which tch exposes.
//
// It includes only ATen/c10 headers, never CUDA or Metal ones, so it builds
// against any libtorch; backend-specific work goes through libtorch's hook
// interfaces, which resolve at run time to whatever backends were built in.
// Backend calls are guarded by the hooks' own availability checks first:
// `at::getAccelerator()` aborts the process on a machine whose libtorch has
// CUDA but whose host has no driver.
#include "devcheck_shim.h"
#include "compat.h"
#include "guarded.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/detail/MPSHooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/version.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <array>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using devcheck_shim::backend_built;
using devcheck_shim::cuda_available;
using devcheck_shim::guarded;
using devcheck_shim::mps_available;

c10::DeviceType device_type_of(int device_type) {
  switch (device_type) {
    case DC_CPU:
      return c10::DeviceType::CPU;
    case DC_CUDA:
      return c10::DeviceType::CUDA;
    case DC_MPS:
      return c10::DeviceType::MPS;
    default:
      TORCH_CHECK(false, "devcheck shim: unknown device type ", device_type);
  }
}

void require_available(int device_type) {
  if (device_type == DC_CUDA) {
    TORCH_CHECK(cuda_available(), "CUDA is not available in this process");
  } else if (device_type == DC_MPS) {
    TORCH_CHECK(mps_available(), "MPS is not available in this process");
  }
}

std::string directory_of_libtorch() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&at::globalContext), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  std::string path(info.dli_fname);
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Mangled name of the function-local static behind the inline
// c10::cuda::warning_state(): its first member is the SyncDebugMode.
constexpr const char* kCudaWarningState = "_ZZN3c104cuda13warning_stateEvE14warning_state_";

struct CapturedWarning {
  std::string message;
  std::string file;
  uint32_t line;
};

struct DeviceEvent {
  c10::Event event;
  c10::Device device;
};

class CaptureHandler : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    const auto& location = warning.source_location();
    warnings.push_back(CapturedWarning{
        warning.msg(), location.file == nullptr ? "" : location.file, location.line});
    if (on_warning != nullptr) {
      on_warning(context);
    }
  }

  std::vector<CapturedWarning> warnings;
  dc_warning_callback on_warning = nullptr;
  void* context = nullptr;
  c10::WarningHandler* previous = nullptr;
  bool previous_warn_always = false;
};

// Receives every allocation and free that libtorch's allocators report while
// memory profiling is on for this thread (and the threads it hands work to).
class TensorMemoryTracker : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t, size_t, c10::Device device)
      override {
    std::lock_guard<std::mutex> guard(mutex_);
    auto slot = static_cast<size_t>(slot_of(device.type()));
    if (alloc_size > 0) {
      sizes_[ptr] = {alloc_size, slot};
      current_[slot] += alloc_size;
      peak_[slot] = std::max(peak_[slot], current_[slot]);
    } else if (auto found = sizes_.find(ptr); found != sizes_.end()) {
      current_[found->second.second] -= found->second.first;
      sizes_.erase(found);
    }
  }

  bool memoryProfilingEnabled() const override {
    return true;
  }

  void read(int device_type, int64_t* current, int64_t* peak) {
    std::lock_guard<std::mutex> guard(mutex_);
    auto slot = static_cast<size_t>(device_type < 0 || device_type > 2 ? 0 : device_type);
    *current = current_[slot];
    *peak = peak_[slot];
  }

  void reset_peak() {
    std::lock_guard<std::mutex> guard(mutex_);
    peak_ = current_;
  }

 private:
  static int slot_of(c10::DeviceType type) {
    switch (type) {
      case c10::DeviceType::CUDA:
        return DC_CUDA;
      case c10::DeviceType::MPS:
        return DC_MPS;
      default:
        return DC_CPU;
    }
  }

  std::mutex mutex_;
  std::unordered_map<void*, std::pair<int64_t, size_t>> sizes_;
  std::array<int64_t, 3> current_{};
  std::array<int64_t, 3> peak_{};
};

struct TensorMemory {
  std::shared_ptr<TensorMemoryTracker> tracker;
  std::unique_ptr<c10::DebugInfoGuard> guard;
};

}  // namespace

extern "C" {

void dc_free_error(char* error) {
  std::free(error);
}

const char* dc_compiled_torch_version(void) {
  return TORCH_VERSION;
}

char* dc_libtorch_lib_dir(char* buf, size_t len) {
  return guarded([&] {
    std::string dir = directory_of_libtorch();
    TORCH_CHECK(!dir.empty(), "could not locate the loaded libtorch_cpu library");
    TORCH_CHECK(dir.size() < len, "library path longer than ", len, " bytes");
    std::memcpy(buf, dir.c_str(), dir.size() + 1);
  });
}

char* dc_ensure_cuda_loaded(int* was_linked, int* loaded_now) {
  return guarded([&] {
    *was_linked = 0;
    *loaded_now = 0;
    if (void* handle = dlopen("libtorch_cuda.so", RTLD_NOLOAD | RTLD_LAZY)) {
      dlclose(handle);
      *was_linked = 1;
      return;
    }
    std::string path = directory_of_libtorch() + "/libtorch_cuda.so";
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return;  // a libtorch without CUDA: nothing to load
    }
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* reason = dlerror();
      TORCH_CHECK(false, "could not load ", path, ": ", reason == nullptr ? "" : reason);
    }
    *loaded_now = 1;
  });
}

char* dc_backend_info(int device_type, dc_backend* out) {
  return guarded([&] {
    *out = dc_backend{0, 0, 0};
    switch (device_type) {
      case DC_CPU:
        *out = dc_backend{1, 1, 1};
        break;
      case DC_CUDA: {
        out->built = backend_built(c10::DeviceType::CUDA) ? 1 : 0;
        out->available = cuda_available() ? 1 : 0;
        out->device_count = out->available ? at::detail::getCUDAHooks().getNumGPUs() : 0;
        break;
      }
      case DC_MPS: {
        out->built = backend_built(c10::DeviceType::MPS) ? 1 : 0;
        out->available = mps_available() ? 1 : 0;
        out->device_count = out->available ? 1 : 0;
        break;
      }
      default:
        device_type_of(device_type);
    }
  });
}

char* dc_synchronize(int device_type, int device_index) {
  return guarded([&] {
    device_type_of(device_type);
    require_available(device_type);
    if (device_type == DC_CUDA) {
      devcheck_shim::cuda_synchronize(static_cast<c10::DeviceIndex>(device_index));
    } else if (device_type == DC_MPS) {
      at::detail::getMPSHooks().deviceSynchronize();
    }
  });
}

char* dc_memory_stats(int device_type, int device_index, dc_memory* out) {
  return guarded([&] {
    *out = dc_memory{0, -1, 0, -1};
    device_type_of(device_type);
    require_available(device_type);
    TORCH_CHECK(device_type != DC_CPU, "CPU memory is measured as process RSS, not by libtorch");
    if (device_type == DC_CUDA) {
      auto stats = devcheck_shim::cuda_allocator_stats(static_cast<c10::DeviceIndex>(device_index));
      out->allocated_current = stats.allocated_current;
      out->allocated_peak = stats.allocated_peak;
      out->reserved_current = stats.reserved_current;
      out->reserved_peak = stats.reserved_peak;
    } else {
      const auto& hooks = at::detail::getMPSHooks();
      out->allocated_current = static_cast<int64_t>(hooks.getCurrentAllocatedMemory());
      out->reserved_current = static_cast<int64_t>(hooks.getDriverAllocatedMemory());
    }
  });
}

char* dc_reset_peak_memory(int device_type, int device_index) {
  return guarded([&] {
    device_type_of(device_type);
    require_available(device_type);
    if (device_type == DC_CUDA) {
      devcheck_shim::cuda_reset_peak(static_cast<c10::DeviceIndex>(device_index));
    }
  });
}

char* dc_empty_cache(int device_type) {
  return guarded([&] {
    device_type_of(device_type);
    require_available(device_type);
    if (device_type == DC_CUDA) {
      devcheck_shim::cuda_empty_cache();
    } else if (device_type == DC_MPS) {
      at::detail::getMPSHooks().emptyCache();
    }
  });
}

char* dc_precision_flags(dc_precision* out) {
  return guarded([&] {
    auto tf32 = devcheck_shim::tf32_flags();
    out->cuda_matmul_tf32 = tf32.matmul;
    out->cudnn_conv_tf32 = tf32.conv;
    out->cudnn_rnn_tf32 = tf32.rnn;
    out->matmul_precision = static_cast<int>(at::globalContext().float32MatmulPrecision());
  });
}

char* dc_event_new(int device_type, int device_index, void** out) {
  return guarded([&] {
    *out = nullptr;
    auto type = device_type_of(device_type);
    TORCH_CHECK(device_type != DC_CPU, "the CPU has no device events");
    require_available(device_type);
    *out = new DeviceEvent{
        c10::Event(type, c10::EventFlag::BACKEND_DEFAULT),
        c10::Device(type, static_cast<c10::DeviceIndex>(device_index))};
  });
}

char* dc_event_record(void* event) {
  return guarded([&] {
    auto* ev = static_cast<DeviceEvent*>(event);
    const auto* impl = c10::impl::getDeviceGuardImpl(ev->device.type());
    ev->event.record(impl->getStream(ev->device));
  });
}

char* dc_event_elapsed_ms(void* start, void* end, double* out) {
  return guarded([&] {
    auto& first = static_cast<DeviceEvent*>(start)->event;
    auto& last = static_cast<DeviceEvent*>(end)->event;
    *out = devcheck_shim::event_elapsed_ms(first, last);
  });
}

void dc_event_free(void* event) {
  delete static_cast<DeviceEvent*>(event);
}

char* dc_set_sync_debug_mode(int device_type, int mode, int* previous) {
  return guarded([&] {
    TORCH_CHECK(device_type == DC_CUDA, "sync-debug mode exists only for CUDA");
    TORCH_CHECK(mode >= 0 && mode <= 2, "sync-debug mode must be 0, 1 or 2, got ", mode);
    auto* state = static_cast<int*>(dlsym(RTLD_DEFAULT, kCudaWarningState));
    TORCH_CHECK(state != nullptr, "this libtorch has no CUDA sync-debug state (built without CUDA)");
    *previous = *state;
    *state = mode;
  });
}

char* dc_warnings_begin(dc_warning_callback on_warning, void* context, void** out) {
  return guarded([&] {
    auto* capture = new CaptureHandler();
    capture->on_warning = on_warning;
    capture->context = context;
    capture->previous = c10::WarningUtils::get_warning_handler();
    capture->previous_warn_always = c10::WarningUtils::get_warnAlways();
    c10::WarningUtils::set_warning_handler(capture);
    c10::WarningUtils::set_warnAlways(true);
    *out = capture;
  });
}

size_t dc_warnings_count(void* capture) {
  return static_cast<CaptureHandler*>(capture)->warnings.size();
}

void dc_warnings_get(void* capture, size_t i, const char** message, const char** file, uint32_t* line) {
  const auto& warnings = static_cast<CaptureHandler*>(capture)->warnings;
  if (i >= warnings.size()) {
    *message = "";
    *file = "";
    *line = 0;
    return;
  }
  const auto& warning = warnings[i];
  *message = warning.message.c_str();
  *file = warning.file.c_str();
  *line = warning.line;
}

void dc_warnings_end(void* capture) {
  auto* handler = static_cast<CaptureHandler*>(capture);
  c10::WarningUtils::set_warning_handler(handler->previous);
  c10::WarningUtils::set_warnAlways(handler->previous_warn_always);
  delete handler;
}

char* dc_tensor_memory_begin(void** out) {
  return guarded([&] {
    auto* memory = new TensorMemory();
    memory->tracker = std::make_shared<TensorMemoryTracker>();
    memory->guard = std::make_unique<c10::DebugInfoGuard>(
        c10::DebugInfoKind::PROFILER_STATE, memory->tracker);
    *out = memory;
  });
}

void dc_tensor_memory_read(void* tracker, int device_type, int64_t* current, int64_t* peak) {
  static_cast<TensorMemory*>(tracker)->tracker->read(device_type, current, peak);
}

void dc_tensor_memory_reset_peak(void* tracker) {
  static_cast<TensorMemory*>(tracker)->tracker->reset_peak();
}

void dc_tensor_memory_end(void* tracker) {
  delete static_cast<TensorMemory*>(tracker);
}

}  // extern "C"
