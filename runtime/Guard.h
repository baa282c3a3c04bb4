//===- Guard.h - The runtime's C-boundary guard and error recording -------===//
//
// Internal to libkina_runtime.a (and its tests). Every exported C function of
// the runtime runs its body through guardStatus(), so no C++ exception crosses
// the C boundary (spec, ABI: "a guard turns them into 5, a std::bad_alloc
// into 2"; the seed's panic-catching wrapper macro). fail() records a status
// and message as the calling thread's last status/error, as kina_last_error()
// and kina_rt_last_status() report them; it never throws, so it is safe inside
// catch blocks and noexcept code.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_RUNTIME_GUARD_H
#define KINA_RUNTIME_GUARD_H

#include "kina/abi.h"

#include <cstdint>
#include <exception>
#include <new>
#include <string>

namespace kina::rt {

/// Records `status` and a copy of `message` (null: the status name) as the
/// calling thread's last status and error; returns `status`. Never throws: if
/// the copy cannot be made, the last error becomes the status name.
int32_t fail(int32_t status, const char *message) noexcept;

/// As fail(status, message.c_str()).
int32_t fail(int32_t status, const std::string &message) noexcept;

/// Records "<where>: <detail>" with `status` as fail() does; never throws.
int32_t failIn(int32_t status, const char *where, const char *detail) noexcept;

/// Runs `body` (a callable returning int32_t status) and returns its status;
/// a std::bad_alloc becomes 2 (Resource Error), any other exception 5
/// (Internal Error), each recorded with a message naming `where`.
template <typename Body>
int32_t guardStatus(const char *where, Body &&body) noexcept {
  try {
    return static_cast<int32_t>(body());
  } catch (const std::bad_alloc &) {
    return failIn(KINA_STATUS_RESOURCE_ERROR, where, "out of memory");
  } catch (const std::exception &e) {
    return failIn(KINA_STATUS_INTERNAL_ERROR, where, e.what());
  } catch (...) {
    return failIn(KINA_STATUS_INTERNAL_ERROR, where,
                  "unknown exception (not derived from std::exception)");
  }
}

} // namespace kina::rt

#endif // KINA_RUNTIME_GUARD_H
