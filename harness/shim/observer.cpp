// The op observer: a RecordFunction callback that records every operator a
// training step runs (name, nesting, thread, tensor arguments) and the native
// stack of the ops that may matter (host syncs, copies, conversions, misplaced
// arguments), so that Rust can name the user's line of each.
//
// The callback is registered thread-locally on the thread that runs the step.
// libtorch carries thread-local RecordFunction callbacks and debug info to the
// autograd engine's worker threads for the graph task they run (ThreadLocalState),
// so backward on CUDA's device threads is seen and attributed to this session,
// while a hung trial's abandoned thread keeps its callback to itself. The
// session is found through ThreadLocalDebugInfo, which travels the same way.
//
// Nothing here may throw into libtorch: every callback body is guarded, and a
// failure is recorded as the session's error for Rust to report.
#include "devcheck_shim.h"
#include "compat.h"
#include "guarded.h"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <execinfo.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

using devcheck_shim::guarded;

int device_code(c10::DeviceType type) {
  switch (type) {
    case c10::DeviceType::CPU:
      return DC_CPU;
    case c10::DeviceType::CUDA:
      return DC_CUDA;
    case c10::DeviceType::MPS:
      return DC_MPS;
    default:
      return DC_OTHER_DEVICE;
  }
}

bool is_floating(c10::ScalarType type) {
  return type == c10::ScalarType::Half || type == c10::ScalarType::BFloat16 ||
         type == c10::ScalarType::Float || type == c10::ScalarType::Double;
}

// What an op's name says about it, worked out once per name.
enum : uint8_t {
  // It reads device data on the host, or marks a CPU fallback, or is backward
  // (whose user line names the ops autograd runs on other threads): always
  // worth a stack.
  kAlwaysStack = 1,
  // A factory: a tensor made inside the step. Worth a stack where the user (or
  // tch) calls it; ops make temporaries inside.
  kFactory = 2,
  // A conversion: where the user calls it, the tch call tells a read from a
  // plain cast; inside other ops only a copy between devices matters (every
  // `x * 2.0` converts its wrapped scalar).
  kConversion = 4,
  kRepeatInterleave = 8,
  kHistc = 16,
  kCopy = 32,
};

uint8_t classify(const std::string& name) {
  static const std::unordered_set<std::string> always = {
      "aten::item", "aten::_local_scalar_dense", "aten::is_nonzero", "aten::equal",
      "aten::nonzero", "aten::argwhere", "aten::nonzero_numpy", "aten::masked_select",
      "aten::_unique", "aten::_unique2", "aten::unique_dim", "aten::unique_consecutive",
      "aten::unique_dim_consecutive", "aten::repeat_interleave", "aten::bincount",
      "aten::histc", "aten::mode", "aten::_linalg_check_errors", "aten::allclose",
      "aten::_to_cpu", "aten::_backward",
  };
  static const std::unordered_set<std::string> factories = {
      "aten::zeros", "aten::ones", "aten::empty", "aten::full", "aten::tensor",
      "aten::scalar_tensor", "aten::arange", "aten::linspace", "aten::eye",
      "aten::rand", "aten::randn", "aten::randint", "aten::randperm", "aten::from_file",
  };
  static const std::unordered_set<std::string> conversions = {
      "aten::to", "aten::_to_copy", "aten::copy_", "aten::cpu",
      // A loader's tensor pinned in the step: new host memory, the same data.
      "aten::pin_memory",
  };
  uint8_t bits = 0;
  bits |= always.count(name) != 0 ? kAlwaysStack : 0;
  bits |= factories.count(name) != 0 ? kFactory : 0;
  bits |= conversions.count(name) != 0 ? kConversion : 0;
  bits |= name == "aten::repeat_interleave" ? kRepeatInterleave : 0;
  bits |= name == "aten::histc" ? kHistc : 0;
  bits |= name == "aten::copy_" ? kCopy : 0;
  return bits;
}

using Record = dc_op_record;

std::atomic<uint64_t> next_generation{1};

// One observation: what the callbacks recorded between begin and end.
class Session : public c10::DebugInfoBase {
 public:
  Session(const dc_observer_config& config, uint64_t trial_thread)
      : config_(config), generation_(next_generation.fetch_add(1)), trial_thread_(trial_thread) {
    // A step's worth, so that recording rarely reallocates mid-step.
    records_.reserve(2048);
    args_.reserve(4096);
    sizes_.reserve(8192);
  }

  const dc_observer_config& config() const {
    return config_;
  }
  uint64_t generation() const {
    return generation_;
  }

  // Appends a record for an op starting now; returns its index, or -1 when full.
  int32_t open(const at::RecordFunction& fn, int32_t parent, int32_t depth) {
    const char* name = fn.name();
    bool backward_node = fn.scope() == at::RecordScope::BACKWARD_FUNCTION;
    std::lock_guard<std::mutex> guard(mutex_);
    if (records_.size() >= limit()) {
      truncated_ = true;
      return -1;
    }
    Record record{};
    record.name = intern(name, backward_node);
    uint8_t kind = classes_[record.name];
    record.parent = parent;
    record.depth = depth;
    record.thread = thread_slot(fn.threadId());
    record.flags = backward_node ? static_cast<uint32_t>(DC_OP_BACKWARD_NODE) : 0u;
    record.target_device_type = -1;
    record.args_begin = static_cast<uint32_t>(args_.size());
    // Shapes are for messages about ops the user (or autograd) called, and for
    // ops that read or move data; the ops nested in those need only devices.
    bool parent_is_backward = parent >= 0 && (records_[static_cast<size_t>(parent)].flags & DC_OP_BACKWARD_NODE) != 0;
    with_sizes_ = parent < 0 || backward_node || parent_is_backward ||
                  (kind & (kAlwaysStack | kConversion | kFactory)) != 0;
    if (fn.needsInputs()) {
      auto inputs = fn.inputs();
      for (size_t position = 0; position < inputs.size(); ++position) {
        const auto& value = inputs[position];
        if (value.isTensor()) {
          add_arg(value.toTensor(), position);
        } else if (value.isTensorList()) {
          for (const auto& tensor : value.toTensorList()) {
            add_arg(tensor, position);
          }
        } else if (value.isOptionalTensorList()) {
          for (const auto& maybe : value.toOptionalTensorList()) {
            devcheck_shim::optional<at::Tensor> tensor = maybe;
            if (tensor.has_value()) {
              add_arg(*tensor, position);
            }
          }
        } else if (value.isDevice()) {
          record.target_device_type = device_code(value.toDevice().type());
        }
      }
      if ((kind & kRepeatInterleave) != 0 && !inputs.empty() && inputs.back().isNone()) {
        record.flags |= DC_OP_NO_OUTPUT_SIZE;
      }
      // A copy to a device waits for the device unless it is non-blocking and
      // (on CUDA) from pinned memory.
      if ((kind & kCopy) != 0 && inputs.size() >= 3 && inputs[0].isTensor() && inputs[1].isTensor()) {
        if (inputs[2].isBool() && inputs[2].toBool()) {
          record.flags |= DC_OP_NON_BLOCKING;
        }
        const auto& source = inputs[1].toTensor();
        const auto& target = inputs[0].toTensor();
        if (source.defined() && target.defined() && source.device().is_cpu() &&
            !target.device().is_cpu()) {
          // `is_pinned` is an op: with callbacks on, it would come back here
          // while this session's lock is held, and wait for itself forever.
          at::DisableRecordFunctionGuard no_callbacks;
          if (source.is_pinned()) {
            record.flags |= DC_OP_PINNED_SOURCE;
          }
        }
      }
      if ((kind & kHistc) != 0 && inputs.size() >= 4 && inputs[2].isScalar() &&
          inputs[3].isScalar() && inputs[2].toScalar().toDouble() == inputs[3].toScalar().toDouble()) {
        record.flags |= DC_OP_HISTC_SYNCS;
      }
    }
    record.args_end = static_cast<uint32_t>(args_.size());
    bool crosses_devices = false;
    for (uint32_t i = record.args_begin; i < record.args_end; ++i) {
      const auto& arg = args_[i];
      if (misplaced(arg)) {
        record.flags |= DC_OP_MISPLACED_ARG;
      }
      crosses_devices |= arg.device_type != args_[record.args_begin].device_type ||
                         (record.target_device_type >= 0 && arg.device_type != record.target_device_type);
    }
    bool capture = (parent < 0 && config_.stack_every_op != 0) ||
                   (record.flags & DC_OP_MISPLACED_ARG) != 0 || (kind & kAlwaysStack) != 0 ||
                   (parent < 0 && (kind & kFactory) != 0) ||
                   ((kind & kConversion) != 0 && (parent < 0 || crosses_devices));
    record.frames_begin = record.frames_end = static_cast<uint32_t>(frames_.size());
    records_.push_back(record);
    auto index = static_cast<int32_t>(records_.size() - 1);
    // One stack per top-level op is enough: every op nested in it was called
    // from the same user line. Only the thread that runs the step has user
    // frames; autograd's threads are attributed through `aten::_backward`.
    if (capture && record.thread == 0) {
      int32_t top = index;
      while (records_[static_cast<size_t>(top)].parent >= 0) {
        top = records_[static_cast<size_t>(top)].parent;
      }
      Record& owner = records_[static_cast<size_t>(top)];
      if (owner.frames_begin == owner.frames_end) {
        capture_stack(owner);
      }
    }
    return index;
  }

  // Keeps the storage a conversion made: a tensor converted on the host
  // (`to_kind`) and then moved stays the same data for provenance.
  void close(int32_t index, const at::RecordFunction& fn) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (index < 0 || static_cast<size_t>(index) >= records_.size()) {
      return;
    }
    Record& record = records_[static_cast<size_t>(index)];
    if ((classes_[record.name] & kConversion) == 0 || (record.flags & DC_OP_BACKWARD_NODE) != 0) {
      return;
    }
    const auto& outputs = fn.outputs();
    if (!outputs.empty() && outputs[0].isTensor()) {
      const auto& tensor = outputs[0].toTensor();
      if (tensor.defined() && tensor.has_storage()) {
        record.output_storage = tensor.storage().data();
      }
    }
  }

  void set_error(const std::string& message) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (error_.empty()) {
      error_ = message;
    }
  }

  // Read-only views for Rust, valid once the callback is removed.
  const std::vector<Record>& records() const {
    return records_;
  }
  const std::vector<dc_op_arg>& args() const {
    return args_;
  }
  const std::vector<int64_t>& sizes() const {
    return sizes_;
  }
  const std::vector<const void*>& frames() const {
    return frames_;
  }
  const std::vector<std::string>& names() const {
    return names_;
  }
  bool truncated() const {
    return truncated_;
  }
  const std::string& error() const {
    return error_;
  }

 private:
  size_t limit() const {
    return config_.max_records == 0 ? 4000000 : config_.max_records;
  }

  bool misplaced(const dc_op_arg& arg) const {
    // libtorch lets 0-dim CPU tensors (wrapped numbers, scalars) meet any device.
    if (arg.dim == 0 && arg.device_type == DC_CPU) {
      return false;
    }
    if (arg.device_type != config_.device_type ||
        (arg.device_type != DC_CPU && arg.device_index != config_.device_index)) {
      return true;
    }
    auto type = static_cast<c10::ScalarType>(arg.scalar_type);
    return is_floating(type) && arg.scalar_type != config_.scalar_type;
  }

  void add_arg(const at::Tensor& tensor, size_t position) {
    if (!tensor.defined()) {
      return;
    }
    dc_op_arg arg{};
    arg.device_type = static_cast<int16_t>(device_code(tensor.device().type()));
    arg.device_index = static_cast<int16_t>(tensor.device().has_index() ? tensor.device().index() : 0);
    arg.scalar_type = static_cast<int16_t>(tensor.scalar_type());
    arg.position = static_cast<uint16_t>(position);
    arg.dim = static_cast<int32_t>(tensor.dim());
    arg.sizes_begin = static_cast<uint32_t>(sizes_.size());
    if (!with_sizes_) {
      arg.sizes_begin = UINT32_MAX;  // not kept
    } else if (!tensor.is_sparse() && !tensor.is_nested()) {
      for (auto size : tensor.sizes()) {
        sizes_.push_back(size);
      }
    } else {
      arg.dim = 0;
    }
    arg.storage = tensor.has_storage() ? tensor.storage().data() : nullptr;
    args_.push_back(arg);
  }

  uint32_t intern(const char* name, bool owned_elsewhere) {
    // Operator names live as long as their schema; autograd node names do not.
    if (!owned_elsewhere) {
      auto found = by_pointer_.find(name);
      if (found != by_pointer_.end()) {
        return found->second;
      }
    }
    std::string text(name == nullptr ? "" : name);
    auto found = by_text_.find(text);
    uint32_t id;
    if (found != by_text_.end()) {
      id = found->second;
    } else {
      id = static_cast<uint32_t>(names_.size());
      names_.push_back(text);
      classes_.push_back(classify(text));
      by_text_.emplace(text, id);
    }
    if (!owned_elsewhere) {
      by_pointer_.emplace(name, id);
    }
    return id;
  }

  uint32_t thread_slot(uint64_t thread_id) {
    if (thread_id == trial_thread_) {
      return 0;
    }
    auto found = threads_.find(thread_id);
    if (found != threads_.end()) {
      return found->second;
    }
    auto slot = static_cast<uint32_t>(threads_.size() + 1);
    threads_.emplace(thread_id, slot);
    return slot;
  }

  void capture_stack(Record& record) {
    size_t wanted = config_.max_frames == 0 ? 64 : config_.max_frames;
    std::vector<void*> buffer(wanted);
    int count = backtrace(buffer.data(), static_cast<int>(wanted));
    record.frames_begin = static_cast<uint32_t>(frames_.size());
    for (int i = 0; i < count; ++i) {
      frames_.push_back(buffer[static_cast<size_t>(i)]);
    }
    record.frames_end = static_cast<uint32_t>(frames_.size());
  }

  dc_observer_config config_;
  uint64_t generation_;
  uint64_t trial_thread_;
  std::mutex mutex_;
  std::vector<Record> records_;
  std::vector<dc_op_arg> args_;
  std::vector<int64_t> sizes_;
  std::vector<const void*> frames_;
  std::vector<std::string> names_;
  std::vector<uint8_t> classes_;
  bool with_sizes_ = true;
  std::unordered_map<const char*, uint32_t> by_pointer_;
  std::unordered_map<std::string, uint32_t> by_text_;
  std::unordered_map<uint64_t, uint32_t> threads_;
  bool truncated_ = false;
  std::string error_;
};

// Which of this thread's ops are open, for nesting. Reset when a new session
// reaches the thread (autograd's worker threads serve many sessions).
struct ThreadOps {
  uint64_t generation = 0;
  std::vector<int32_t> open;
};

thread_local ThreadOps thread_ops;

// The session's debug info slot: TEST_INFO is free in production libtorch and
// travels with ThreadLocalState to the threads a step hands work to. A function,
// not a constant: libtorch 2.13 made the kinds exported objects instead of enum
// values, which another library initialises.
c10::DebugInfoKind session_slot() {
  return c10::DebugInfoKind::TEST_INFO;
}

// The session of this thread's debug info, looked up once per debug info
// (every op asks; a dynamic_cast each time would cost more than the op's record).
Session* current_session() {
  thread_local c10::DebugInfoBase* seen = nullptr;
  thread_local Session* session = nullptr;
  auto* info = c10::ThreadLocalDebugInfo::get(session_slot());
  if (info != seen) {
    seen = info;
    session = dynamic_cast<Session*>(info);
  }
  return session;
}

// The start callback returns no context (an allocation per op saved): start and
// end always run as a pair on one thread, and the callback and the session
// travel together, so the end callback pops what the start pushed.
std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  Session* session = nullptr;
  try {
    session = current_session();
    if (session == nullptr) {
      return nullptr;
    }
    if (thread_ops.generation != session->generation()) {
      thread_ops.generation = session->generation();
      thread_ops.open.clear();
    }
    int32_t parent = thread_ops.open.empty() ? -1 : thread_ops.open.back();
    auto depth = static_cast<int32_t>(thread_ops.open.size());
    // Pushed first, so that a throw below leaves the pair balanced.
    thread_ops.open.push_back(parent);
    int32_t index = session->open(fn, parent, depth);
    // A full session still tracks nesting, so that depths stay right.
    thread_ops.open.back() = index < 0 ? parent : index;
  } catch (const std::exception& e) {
    if (session != nullptr) {
      session->set_error(std::string("op observer: ") + e.what());
    }
  } catch (...) {
    if (session != nullptr) {
      session->set_error("op observer: unknown C++ exception");
    }
  }
  return nullptr;
}

void on_op_end(const at::RecordFunction& fn, at::ObserverContext*) {
  Session* session = current_session();
  if (session == nullptr || session->generation() != thread_ops.generation ||
      thread_ops.open.empty()) {
    return;
  }
  int32_t index = thread_ops.open.back();
  thread_ops.open.pop_back();
  try {
    // A full session's placeholder is the parent, already closed or still open: skip.
    if (index >= 0 && (thread_ops.open.empty() || thread_ops.open.back() != index)) {
      session->close(index, fn);
    }
  } catch (const std::exception& e) {
    session->set_error(std::string("op observer: ") + e.what());
  } catch (...) {
    session->set_error("op observer: unknown C++ exception");
  }
}

struct Observer {
  std::shared_ptr<Session> session;
  std::unique_ptr<c10::DebugInfoGuard> guard;
  at::CallbackHandle handle = 0;
  bool active = false;
};

}  // namespace

extern "C" {

char* dc_observer_begin(const dc_observer_config* config, void** out) {
  return guarded([&] {
    *out = nullptr;
    auto observer = std::make_unique<Observer>();
    observer->session =
        std::make_shared<Session>(*config, at::RecordFunction::currentThreadId());
    observer->guard = std::make_unique<c10::DebugInfoGuard>(session_slot(), observer->session);
    observer->handle = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&on_op_start, &on_op_end)
            .needsInputs(true)
            .needsOutputs(true)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
    observer->active = true;
    *out = observer.release();
  });
}

char* dc_observer_end(void* observer) {
  return guarded([&] {
    auto* state = static_cast<Observer*>(observer);
    if (!state->active) {
      return;
    }
    state->active = false;
    at::removeCallback(state->handle);
    state->guard.reset();
  });
}

void dc_observer_view(void* observer, dc_observer_view_t* out) {
  const auto& session = *static_cast<Observer*>(observer)->session;
  out->records = session.records().data();
  out->record_count = session.records().size();
  out->args = session.args().data();
  out->arg_count = session.args().size();
  out->sizes = session.sizes().data();
  out->size_count = session.sizes().size();
  out->frames = session.frames().data();
  out->frame_count = session.frames().size();
  out->name_count = session.names().size();
  out->truncated = session.truncated() ? 1 : 0;
  out->error = session.error().empty() ? nullptr : session.error().c_str();
}

const char* dc_observer_name(void* observer, size_t i) {
  const auto& names = static_cast<Observer*>(observer)->session->names();
  return i < names.size() ? names[i].c_str() : "";
}

void dc_observer_free(void* observer) {
  auto* state = static_cast<Observer*>(observer);
  if (state->active) {
    // Never leave a callback behind, even if Rust forgot to end it.
    try {
      at::removeCallback(state->handle);
    } catch (...) {
    }
    state->guard.reset();
  }
  delete state;
}

}  // extern "C"
