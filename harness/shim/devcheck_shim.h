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
enum { DC_CPU = 0, DC_CUDA = 1, DC_MPS = 2 };

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

#ifdef __cplusplus
}
#endif
