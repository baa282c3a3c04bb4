//===- Errors.cpp - Status names, per-thread last error, codegen support --===//
//
// Implements the status half of the runtime's C interface: kina_status_name
// (the seed's FfiErrorCode names), the calling thread's last error and last
// status (kina_last_error, kina_rt_last_status, kina_rt_begin_call), the
// helpers generated entry points call to report failures (kina_rt_fail,
// kina_rt_shape_error), and kina::rt::fail(), through which every other part
// of the runtime records its errors. The state is thread_local, so threads
// never see each other's errors.
//
//===----------------------------------------------------------------------===//
#include "Guard.h"

#include "kina/runtime.h"

#include <string>

namespace {

/// The calling thread's last status and error. `fixedText`, when set, takes
/// the place of `text` (used when copying a message failed for lack of
/// memory; it points at static storage).
struct ThreadErrorState {
  std::string text;
  const char *fixedText = nullptr;
  int32_t status = KINA_STATUS_SUCCESS;
};

ThreadErrorState &threadState() noexcept {
  thread_local ThreadErrorState state;
  return state;
}

} // namespace

namespace kina::rt {

int32_t fail(int32_t status, const char *message) noexcept {
  ThreadErrorState &state = threadState();
  state.status = status;
  state.fixedText = nullptr;
  try {
    state.text.assign(message ? message : kina_status_name(status));
  } catch (...) {
    state.text.clear();
    state.fixedText = kina_status_name(status);
  }
  return status;
}

int32_t fail(int32_t status, const std::string &message) noexcept {
  return fail(status, message.c_str());
}

int32_t failIn(int32_t status, const char *where, const char *detail) noexcept {
  try {
    std::string message = where ? where : "kina runtime";
    message += ": ";
    message += detail ? detail : kina_status_name(status);
    return fail(status, message);
  } catch (...) {
    return fail(status, detail);
  }
}

} // namespace kina::rt

extern "C" {

const char *kina_status_name(int32_t status) {
  switch (status) {
  case KINA_STATUS_SUCCESS:
    return "Success";
  case KINA_STATUS_VALIDATION_ERROR:
    return "Validation Error";
  case KINA_STATUS_RESOURCE_ERROR:
    return "Resource Error";
  case KINA_STATUS_GPU_ERROR:
    return "GPU Error";
  case KINA_STATUS_UNIMPLEMENTED_ERROR:
    return "Unimplemented Error";
  case KINA_STATUS_INTERNAL_ERROR:
    return "Internal Error";
  case KINA_STATUS_TYPE_ERROR:
    return "Type Error";
  default:
    return "Unknown Status";
  }
}

const char *kina_last_error(void) {
  const ThreadErrorState &state = threadState();
  return state.fixedText ? state.fixedText : state.text.c_str();
}

void kina_rt_begin_call(void) {
  ThreadErrorState &state = threadState();
  state.status = KINA_STATUS_SUCCESS;
  state.fixedText = nullptr;
  state.text.clear();
}

int32_t kina_rt_last_status(void) { return threadState().status; }

int32_t kina_rt_fail(int32_t status, const char *message) {
  return kina::rt::fail(status, message);
}

int32_t kina_rt_shape_error(const char *message_template, int64_t first,
                            int64_t second) {
  int32_t status = kina::rt::guardStatus("kina_rt_shape_error", [&] {
    std::string pattern = message_template
                              ? message_template
                              : "shape mismatch at run time ({0} vs {1})";
    std::string message;
    for (size_t i = 0; i < pattern.size(); ++i) {
      if (pattern.compare(i, 3, "{0}") == 0) {
        message += std::to_string(first);
        i += 2;
      } else if (pattern.compare(i, 3, "{1}") == 0) {
        message += std::to_string(second);
        i += 2;
      } else {
        message += pattern[i];
      }
    }
    return kina::rt::fail(KINA_STATUS_VALIDATION_ERROR, message);
  });
  // Out of memory while formatting: the guard recorded 2, but the caller
  // asked to report a shape error, so the thread's status says 1.
  if (status != KINA_STATUS_VALIDATION_ERROR)
    kina::rt::fail(KINA_STATUS_VALIDATION_ERROR, message_template);
  return KINA_STATUS_VALIDATION_ERROR;
}

} // extern "C"
