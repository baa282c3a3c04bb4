//===- GuardTest.cpp - The runtime's C-boundary exception guard -----------===//
//
// Tests runtime/Guard.h directly (the guard every exported runtime function
// runs its body through): a std::bad_alloc becomes status 2, any other
// exception (std::exception or not) 5, each recorded with a message naming
// the function; a normal status passes through untouched.
//
//===----------------------------------------------------------------------===//
#include "Guard.h"

#include "kina/runtime.h"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>

namespace {

TEST(RuntimeGuard, PassesStatusThrough) {
  kina_rt_begin_call();
  EXPECT_EQ(kina::rt::guardStatus("f", [] { return 0; }), 0);
  EXPECT_EQ(kina::rt::guardStatus("f", [] { return 6; }), 6);
  EXPECT_EQ(kina_rt_last_status(), 0);
  EXPECT_STREQ(kina_last_error(), "");
}

TEST(RuntimeGuard, BadAllocIsResourceError) {
  kina_rt_begin_call();
  int32_t status = kina::rt::guardStatus(
      "my_function", []() -> int32_t { throw std::bad_alloc(); });
  EXPECT_EQ(status, KINA_STATUS_RESOURCE_ERROR);
  EXPECT_EQ(kina_rt_last_status(), KINA_STATUS_RESOURCE_ERROR);
  EXPECT_STREQ(kina_last_error(), "my_function: out of memory");
}

TEST(RuntimeGuard, StdExceptionIsInternalError) {
  kina_rt_begin_call();
  int32_t status = kina::rt::guardStatus(
      "my_function", []() -> int32_t { throw std::runtime_error("boom"); });
  EXPECT_EQ(status, KINA_STATUS_INTERNAL_ERROR);
  EXPECT_EQ(kina_rt_last_status(), KINA_STATUS_INTERNAL_ERROR);
  EXPECT_STREQ(kina_last_error(), "my_function: boom");
}

TEST(RuntimeGuard, NonStdExceptionIsInternalError) {
  kina_rt_begin_call();
  int32_t status =
      kina::rt::guardStatus("my_function", []() -> int32_t { throw 42; });
  EXPECT_EQ(status, KINA_STATUS_INTERNAL_ERROR);
  EXPECT_EQ(kina_rt_last_status(), KINA_STATUS_INTERNAL_ERROR);
  std::string message = kina_last_error();
  EXPECT_EQ(message.rfind("my_function: ", 0), 0u) << message;
  EXPECT_NE(message.find("unknown exception"), std::string::npos) << message;
}

} // namespace
