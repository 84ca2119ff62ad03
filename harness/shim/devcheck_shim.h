// C ABI of the devcheck shim: the few libtorch facilities that tch does not expose.
//
// Every fallible function returns NULL on success or an error message that the
// caller must release with dc_free_error. No function lets a C++ exception escape.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Device types as devcheck numbers them (not c10's numbering).
enum { DC_CPU = 0, DC_CUDA = 1, DC_MPS = 2, DC_OTHER_DEVICE = 3 };

typedef struct {
  int built;         // compiled into the loaded libtorch
  int available;     // usable now (driver, device present)
  int device_count;  // 0 when not available
} dc_backend;

typedef struct {
  int64_t allocated_current;
  int64_t allocated_peak;  // -1 where the allocator keeps no peak (MPS)
  int64_t reserved_current;
  int64_t reserved_peak;   // -1 where unknown
} dc_memory;

typedef struct {
  int cuda_matmul_tf32;  // TF32 allowed for float32 matmul on CUDA
  int cudnn_conv_tf32;   // TF32 allowed for float32 convolutions in cuDNN
  int cudnn_rnn_tf32;    // TF32 allowed for float32 recurrent layers in cuDNN
  int matmul_precision;  // 0 highest, 1 high, 2 medium (torch.get_float32_matmul_precision)
} dc_precision;

void dc_free_error(char* error);

// Loads libtorch_cuda from the same directory as the loaded libtorch_cpu when the
// binary was linked with --as-needed and lost it. Must run before any other call.
// *was_linked: it was already loaded; *loaded_now: this call loaded it.
char* dc_ensure_cuda_loaded(int* was_linked, int* loaded_now);
// Directory holding the libtorch_cpu library this process loaded.
char* dc_libtorch_lib_dir(char* buf, size_t len);
// libtorch version the shim was compiled against, e.g. "2.11.0".
const char* dc_compiled_torch_version(void);

char* dc_backend_info(int device_type, dc_backend* out);
char* dc_synchronize(int device_type, int device_index);
char* dc_memory_stats(int device_type, int device_index, dc_memory* out);
char* dc_reset_peak_memory(int device_type, int device_index);
char* dc_empty_cache(int device_type);
char* dc_precision_flags(dc_precision* out);

// Device events (timing measured on the device's own clock).
char* dc_event_new(int device_type, int device_index, void** out);
char* dc_event_record(void* event);
// Waits for `end`, then gives the milliseconds between the two recorded events.
char* dc_event_elapsed_ms(void* start, void* end, double* out);
void dc_event_free(void* event);

// CUDA sync-debug mode: 0 off, 1 warn, 2 error. Gives the previous mode.
char* dc_set_sync_debug_mode(int device_type, int mode, int* previous);

// Captures libtorch warnings (TORCH_WARN) on this thread with warn-always on.
// `on_warning`, if not NULL, is called with `context` as each warning arrives
// (still inside the operation that raised it, so a backtrace finds the caller).
typedef void (*dc_warning_callback)(void* context);
char* dc_warnings_begin(dc_warning_callback on_warning, void* context, void** out);
size_t dc_warnings_count(void* capture);
// Borrowed strings, valid until dc_warnings_end.
void dc_warnings_get(void* capture, size_t i, const char** message, const char** file, uint32_t* line);
void dc_warnings_end(void* capture);

// Tensor memory on this thread through libtorch's memory-reporting hook (the one
// the profiler uses): exact live bytes per device type, CPU included.
char* dc_tensor_memory_begin(void** out);
// Live bytes allocated since begin (frees of earlier allocations are not counted)
// and the peak since begin or the last reset, for one device type.
void dc_tensor_memory_read(void* tracker, int device_type, int64_t* current, int64_t* peak);
void dc_tensor_memory_reset_peak(void* tracker);
void dc_tensor_memory_end(void* tracker);

// The op observer (shim/observer.cpp): a RecordFunction callback on this thread
// (and the autograd threads that work for it) recording every op of a step.
typedef struct {
  int device_type;      // the device the step is meant to run on
  int device_index;
  int scalar_type;      // its floating dtype, as c10::ScalarType numbers it
  size_t max_records;   // records kept at most (0: 4,000,000); later ops are counted as truncated
  size_t max_frames;    // native frames per captured stack (0: 64)
  int stack_every_op;   // 1: a stack for every top-level op of the step's thread
                        // (slower; for finding the line where a step broke)
} dc_observer_config;

// Record flags.
enum {
  DC_OP_BACKWARD_NODE = 1,   // an autograd node (RecordScope::BACKWARD_FUNCTION)
  DC_OP_MISPLACED_ARG = 2,   // a tensor argument on another device, or in another floating dtype
  DC_OP_NO_OUTPUT_SIZE = 4,  // repeat_interleave without output_size (reads the repeats on the host)
  DC_OP_HISTC_SYNCS = 8,     // histc with min == max (reads the range on the host)
  DC_OP_NON_BLOCKING = 16,   // copy_ asked to be non-blocking
  DC_OP_PINNED_SOURCE = 32,  // copy_ from pinned host memory to a device
};

// One op, in the order ops started. Indexes refer to the tables of the view.
typedef struct {
  uint32_t name;              // index of its name (dc_observer_name)
  int32_t parent;             // the enclosing op on the same thread, -1 at the top
  int32_t depth;              // nesting depth on its thread
  uint32_t thread;            // 0: the observing thread; 1, 2, …: others, in order seen
  uint32_t flags;             // DC_OP_* bits
  int32_t target_device_type; // the type of a Device argument (to, _to_copy), -1 if none
  uint32_t args_begin, args_end;      // its tensor arguments
  uint32_t frames_begin, frames_end;  // its native stack, captured for top-level ops that matter
  const void* output_storage;  // a conversion's (to, _to_copy) result, for provenance; NULL otherwise
} dc_op_record;

// One tensor argument of an op.
typedef struct {
  int16_t device_type;   // DC_CPU, DC_CUDA, DC_MPS or DC_OTHER_DEVICE
  int16_t device_index;
  int16_t scalar_type;   // c10::ScalarType
  uint16_t position;     // argument position (tensors of a list share it)
  int32_t dim;
  uint32_t sizes_begin;  // dim sizes from here in the sizes table (UINT32_MAX: not kept)
  const void* storage;   // identity of its storage, for provenance within the step
} dc_op_arg;

typedef struct {
  const dc_op_record* records;
  size_t record_count;
  const dc_op_arg* args;
  size_t arg_count;
  const int64_t* sizes;
  size_t size_count;
  const void* const* frames;  // return addresses
  size_t frame_count;
  size_t name_count;
  int truncated;              // more ops ran than max_records
  const char* error;          // a failure inside the callback, or NULL
} dc_observer_view_t;

// The same random numbers on every device (shim/random.cpp): until
// dc_host_random_end, the random kernels of this device type (DC_CUDA, DC_MPS)
// draw on the CPU from the CPU's default generator, as a CPU run does.
char* dc_host_random_begin(int device_type, void** out);
void dc_host_random_end(void* state);

// Until dc_host_random_end(state), the CPU's normal_ and uniform_ fill a
// float64 tensor with what they would draw in `draw_dtype` (a c10::ScalarType
// code), widened: the float64 reference draws the case's own numbers.
char* dc_reference_random_begin(int draw_dtype, void** out);

char* dc_observer_begin(const dc_observer_config* config, void** out);
// Removes the callback; the recording stays readable until dc_observer_free.
char* dc_observer_end(void* observer);
void dc_observer_view(void* observer, dc_observer_view_t* out);
const char* dc_observer_name(void* observer, size_t i);
void dc_observer_free(void* observer);

#ifdef __cplusplus
}
#endif
