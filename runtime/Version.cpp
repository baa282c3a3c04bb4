//===- Version.cpp - The runtime's version and the ABI check of objects ---===//
//
// Every object kinac writes records the kinac version and the ABI version
// (KINA_ABI_VERSION, kina/abi.h) it was compiled for, and its `kina_<fn>`
// entries call kina_rt_check_version on their first call in a process, so an
// object compiled for another ABI than the linked runtime's is refused with
// status 1 and a message saying which versions met, instead of running with
// a mismatched contract. kina_runtime_version names the kinac release the
// runtime was built with (KINA_RUNTIME_VERSION, kina/RuntimeConfig.h).
//
//===----------------------------------------------------------------------===//
#include "Guard.h"

#include "kina/RuntimeConfig.h"
#include "kina/runtime.h"

#include <string>

extern "C" {

int32_t kina_rt_check_version(const char *entry, int32_t abi_version,
                              const char *compiler) {
  if (abi_version == KINA_ABI_VERSION)
    return KINA_STATUS_SUCCESS;
  int32_t status = kina::rt::guardStatus("kina_rt_check_version", [&] {
    std::string message = entry ? entry : "?";
    message += ": this object was compiled by ";
    message += compiler ? compiler : "?";
    message +=
        ", but the linked libkina_runtime.a is from kinac " KINA_RUNTIME_VERSION
        " (Kina ABI " +
        std::to_string(KINA_ABI_VERSION) +
        "), which cannot run code compiled for Kina ABI " +
        std::to_string(abi_version) +
        "; recompile the .kir file with the kinac that matches the "
        "runtime";
    return kina::rt::fail(KINA_STATUS_VALIDATION_ERROR, message);
  });
  // Out of memory while formatting: still a version mismatch.
  if (status != KINA_STATUS_VALIDATION_ERROR)
    kina::rt::fail(KINA_STATUS_VALIDATION_ERROR,
                   "Kina ABI version mismatch between an object and "
                   "libkina_runtime.a");
  return KINA_STATUS_VALIDATION_ERROR;
}

const char *kina_runtime_version(void) { return KINA_RUNTIME_VERSION; }

} // extern "C"
