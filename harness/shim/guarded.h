// What every C entry point of the shim shares: no C++ exception may unwind into
// Rust, so each body runs inside `guarded`, which turns an exception into an
// error string (malloc'd, released by dc_free_error).
#pragma once

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

namespace devcheck_shim {

inline char* error_copy(const std::string& message) {
  char* out = static_cast<char*>(std::malloc(message.size() + 1));
  if (out != nullptr) {
    std::memcpy(out, message.c_str(), message.size() + 1);
  }
  return out;
}

template <typename F>
char* guarded(F&& body) {
  try {
    body();
    return nullptr;
  } catch (const c10::Error& e) {
    return error_copy(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return error_copy(e.what());
  } catch (...) {
    return error_copy("unknown C++ exception in libtorch");
  }
}

}  // namespace devcheck_shim
