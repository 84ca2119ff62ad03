// The same random numbers on every device, for the tolerance check.
//
// A step that draws random numbers (dropout, noise, sampling) draws them from
// the CPU's generator on the CPU and from the device's own generator (CUDA's
// Philox, MPS's) on an accelerator: the trajectories part at the first draw and
// cannot be compared. While the tolerance check runs a step on an accelerator,
// the kernels below replace the device's random kernels: each draws on the CPU,
// from the CPU's default generator, in the same order and shape as the CPU run
// does, and copies the result to the device. Dropout on CUDA is a fused kernel
// (`native_dropout`); it is replaced by what the CPU computes for dropout
// (`_dropout_impl`: a bernoulli noise tensor, scaled).
//
// The float64 reference on the CPU needs the same numbers too: the CPU's
// normal_ and uniform_ consume the generator differently by dtype (a float64
// draw takes 53 random bits where a float32 one takes 24), so a step that adds
// noise (a VAE's reparameterization, a diffusion step) would be compared with a
// reference that drew other noise. While the reference runs, those two kernels
// draw in the case's own dtype and widen the result: the numbers the float32
// runs draw, exactly.
//
// A replacement is a `torch::Library` registered for a dispatch key: libtorch
// keeps the kernels it replaces and restores them when the library is
// destroyed.
#include "devcheck_shim.h"
#include "compat.h"
#include "guarded.h"

#include <ATen/ATen.h>
#include <ATen/ops/normal_native.h>
#include <ATen/ops/uniform_native.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <atomic>
#include <memory>
#include <optional>
#include <tuple>

namespace {

using devcheck_shim::guarded;

at::Tensor drawn_like(const at::Tensor& self) {
  return at::empty(self.sizes(), self.options().device(at::kCPU));
}

at::Tensor& host_bernoulli_float(at::Tensor& self, double p, devcheck_shim::optional<at::Generator>) {
  auto drawn = drawn_like(self);
  drawn.bernoulli_(p);
  return self.copy_(drawn);
}

at::Tensor& host_bernoulli_tensor(at::Tensor& self, const at::Tensor& p, devcheck_shim::optional<at::Generator>) {
  auto drawn = drawn_like(self);
  drawn.bernoulli_(p.to(at::kCPU));
  return self.copy_(drawn);
}

at::Tensor host_bernoulli(const at::Tensor& self, devcheck_shim::optional<at::Generator>) {
  return at::bernoulli(self.to(at::kCPU)).to(self.device());
}

at::Tensor host_bernoulli_p(const at::Tensor& self, double p, devcheck_shim::optional<at::Generator>) {
  return at::bernoulli(self.to(at::kCPU), p).to(self.device());
}

at::Tensor& host_uniform(at::Tensor& self, double from, double to, devcheck_shim::optional<at::Generator>) {
  auto drawn = drawn_like(self);
  drawn.uniform_(from, to);
  return self.copy_(drawn);
}

at::Tensor& host_normal(at::Tensor& self, double mean, double std, devcheck_shim::optional<at::Generator>) {
  auto drawn = drawn_like(self);
  drawn.normal_(mean, std);
  return self.copy_(drawn);
}

at::Tensor& host_random(at::Tensor& self, devcheck_shim::optional<at::Generator>) {
  auto drawn = drawn_like(self);
  drawn.random_();
  return self.copy_(drawn);
}

at::Tensor& host_random_from(
    at::Tensor& self,
    int64_t from,
    devcheck_shim::optional<int64_t> to,
    devcheck_shim::optional<at::Generator>) {
  auto drawn = drawn_like(self);
  drawn.random_(from, to);
  return self.copy_(drawn);
}

at::Tensor& host_random_to(at::Tensor& self, int64_t to, devcheck_shim::optional<at::Generator>) {
  auto drawn = drawn_like(self);
  drawn.random_(to);
  return self.copy_(drawn);
}

// What `at::dropout` computes on the CPU (`_dropout_impl`), with the CPU's noise.
std::tuple<at::Tensor, at::Tensor> host_native_dropout(
    const at::Tensor& input,
    double p,
    devcheck_shim::optional<bool> train) {
  if (!train.value_or(true) || p == 0) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  if (p == 1) {
    return {at::zeros_like(input), at::zeros_like(input, input.options().dtype(at::kBool))};
  }
  auto noise = drawn_like(input);
  noise.bernoulli_(1 - p);
  noise = noise.to(input.device());
  auto mask = noise.to(at::kBool);
  noise.div_(1 - p);
  return {input.mul(noise), mask};
}

// Swallows the warning libtorch gives when a kernel is replaced on purpose.
class Quiet : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

struct HostRandom {
  std::unique_ptr<torch::Library> library;
};

// The dtype the reference's float64 draws are made in (a c10::ScalarType).
std::atomic<int> reference_draw_dtype{static_cast<int>(at::kFloat)};

// Where a float64 tensor is filled, the same fill in the draw dtype, widened.
bool draws_narrower(const at::Tensor& self) {
  return self.scalar_type() == at::kDouble &&
         reference_draw_dtype.load() != static_cast<int>(at::kDouble);
}

at::Tensor narrower_like(const at::Tensor& self) {
  return at::empty(
      self.sizes(), self.options().dtype(static_cast<at::ScalarType>(reference_draw_dtype.load())));
}

// `fill(tensor)` is the CPU's own kernel, called directly (the dispatcher
// would call the replacement again): on `self`, or on a narrower tensor that
// `self` then takes, widened.
template <typename Fill>
at::Tensor& fill_as_drawn(at::Tensor& self, Fill fill) {
  if (!draws_narrower(self)) {
    return fill(self);
  }
  auto drawn = narrower_like(self);
  fill(drawn);
  return self.copy_(drawn);
}

at::Tensor& reference_normal(at::Tensor& self, double mean, double std, devcheck_shim::optional<at::Generator> generator) {
  return fill_as_drawn(self, [&](at::Tensor& t) -> at::Tensor& {
    return at::native::normal_(t, mean, std, generator);
  });
}

at::Tensor& reference_uniform(at::Tensor& self, double from, double to, devcheck_shim::optional<at::Generator> generator) {
  return fill_as_drawn(self, [&](at::Tensor& t) -> at::Tensor& {
    return at::native::uniform_(t, from, to, generator);
  });
}

}  // namespace

extern "C" {

char* dc_host_random_begin(int device_type, void** out) {
  return guarded([&] {
    *out = nullptr;
    c10::DispatchKey key;
    if (device_type == DC_CUDA) {
      key = c10::DispatchKey::CUDA;
    } else if (device_type == DC_MPS) {
      key = c10::DispatchKey::MPS;
    } else {
      TORCH_CHECK(false, "the CPU draws its own random numbers already");
    }
    Quiet quiet;
    c10::WarningUtils::WarningHandlerGuard guard(&quiet);
    auto state = std::make_unique<HostRandom>();
    state->library = std::make_unique<torch::Library>(
        torch::Library::IMPL, "aten", key, __FILE__, static_cast<uint32_t>(__LINE__));
    auto& m = *state->library;
    m.impl("bernoulli_.float", TORCH_FN(host_bernoulli_float));
    m.impl("bernoulli_.Tensor", TORCH_FN(host_bernoulli_tensor));
    m.impl("bernoulli", TORCH_FN(host_bernoulli));
    m.impl("bernoulli.p", TORCH_FN(host_bernoulli_p));
    m.impl("uniform_", TORCH_FN(host_uniform));
    m.impl("normal_", TORCH_FN(host_normal));
    m.impl("random_", TORCH_FN(host_random));
    m.impl("random_.from", TORCH_FN(host_random_from));
    m.impl("random_.to", TORCH_FN(host_random_to));
    if (device_type == DC_CUDA) {
      m.impl("native_dropout", TORCH_FN(host_native_dropout));
    }
    *out = state.release();
  });
}

void dc_host_random_end(void* state) {
  Quiet quiet;
  c10::WarningUtils::WarningHandlerGuard guard(&quiet);
  delete static_cast<HostRandom*>(state);
}

char* dc_reference_random_begin(int draw_dtype, void** out) {
  return guarded([&] {
    *out = nullptr;
    auto dtype = static_cast<at::ScalarType>(draw_dtype);
    TORCH_CHECK(
        at::isFloatingType(dtype), "reference draws are made in a floating dtype, not ", dtype);
    reference_draw_dtype.store(draw_dtype);
    Quiet quiet;
    c10::WarningUtils::WarningHandlerGuard guard(&quiet);
    auto state = std::make_unique<HostRandom>();
    state->library = std::make_unique<torch::Library>(
        torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, static_cast<uint32_t>(__LINE__));
    auto& m = *state->library;
    m.impl("normal_", TORCH_FN(reference_normal));
    m.impl("uniform_", TORCH_FN(reference_uniform));
    *out = state.release();
  });
}

}  // extern "C"
