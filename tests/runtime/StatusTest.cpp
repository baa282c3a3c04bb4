//===- StatusTest.cpp - Status names, per-thread errors, kina_rt_* -------===//
//
// Tests the status half of libkina_runtime.a: the seed's status codes and
// their names, the calling thread's last error/status (isolated per thread),
// and the support functions generated entry points call (kina_rt_begin_call,
// kina_rt_last_status, kina_rt_fail, kina_rt_shape_error).
//
//===----------------------------------------------------------------------===//
#include "kina/runtime.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>

namespace {

TEST(RuntimeStatus, CodesMatchTheSeed) {
  EXPECT_EQ(KINA_STATUS_SUCCESS, 0);
  EXPECT_EQ(KINA_STATUS_VALIDATION_ERROR, 1);
  EXPECT_EQ(KINA_STATUS_RESOURCE_ERROR, 2);
  EXPECT_EQ(KINA_STATUS_GPU_ERROR, 3);
  EXPECT_EQ(KINA_STATUS_UNIMPLEMENTED_ERROR, 4);
  EXPECT_EQ(KINA_STATUS_INTERNAL_ERROR, 5);
  EXPECT_EQ(KINA_STATUS_TYPE_ERROR, 6);
  EXPECT_EQ(sizeof(FfiErrorCode), 4u);
}

TEST(RuntimeStatus, Names) {
  EXPECT_STREQ(kina_status_name(0), "Success");
  EXPECT_STREQ(kina_status_name(1), "Validation Error");
  EXPECT_STREQ(kina_status_name(2), "Resource Error");
  EXPECT_STREQ(kina_status_name(3), "GPU Error");
  EXPECT_STREQ(kina_status_name(4), "Unimplemented Error");
  EXPECT_STREQ(kina_status_name(5), "Internal Error");
  EXPECT_STREQ(kina_status_name(6), "Type Error");
  EXPECT_STREQ(kina_status_name(7), "Unknown Status");
  EXPECT_STREQ(kina_status_name(-1), "Unknown Status");
  EXPECT_STREQ(kina_status_name(INT32_MIN), "Unknown Status");
}

TEST(RuntimeStatus, FailRecordsAndBeginCallClears) {
  kina_rt_begin_call();
  EXPECT_STREQ(kina_last_error(), "");
  EXPECT_EQ(kina_rt_last_status(), 0);

  EXPECT_EQ(kina_rt_fail(2, "no memory for the result"), 2);
  EXPECT_EQ(kina_rt_last_status(), 2);
  EXPECT_STREQ(kina_last_error(), "no memory for the result");

  // The message is copied, not kept by pointer.
  std::string transient = "transient message";
  EXPECT_EQ(kina_rt_fail(5, transient.c_str()), 5);
  transient.assign("overwritten!!!!!!");
  EXPECT_STREQ(kina_last_error(), "transient message");

  // A null message gets the status name.
  EXPECT_EQ(kina_rt_fail(6, nullptr), 6);
  EXPECT_STREQ(kina_last_error(), "Type Error");
  EXPECT_EQ(kina_rt_last_status(), 6);

  kina_rt_begin_call();
  EXPECT_STREQ(kina_last_error(), "");
  EXPECT_EQ(kina_rt_last_status(), 0);
}

TEST(RuntimeStatus, SuccessfulCallsKeepTheLastFailure) {
  kina_rt_begin_call();
  EXPECT_EQ(runtime_free(nullptr), 1);
  EXPECT_EQ(kina_rt_last_status(), 1);
  std::string message = kina_last_error();
  EXPECT_NE(message.find("runtime_free"), std::string::npos) << message;
  EXPECT_EQ(runtime_gpu_free_all(), 0);
  EXPECT_EQ(kina_rt_last_status(), 1);
  EXPECT_EQ(std::string(kina_last_error()), message);
}

TEST(RuntimeStatus, LastErrorIsPerThread) {
  kina_rt_begin_call();
  kina_rt_fail(3, "main thread error");
  std::string otherBefore, otherAfter;
  int32_t otherStatusBefore = -1, otherStatusAfter = -1;
  std::thread other([&] {
    otherBefore = kina_last_error();
    otherStatusBefore = kina_rt_last_status();
    kina_rt_fail(4, "other thread error");
    otherAfter = kina_last_error();
    otherStatusAfter = kina_rt_last_status();
  });
  other.join();
  EXPECT_EQ(otherBefore, "");
  EXPECT_EQ(otherStatusBefore, 0);
  EXPECT_EQ(otherAfter, "other thread error");
  EXPECT_EQ(otherStatusAfter, 4);
  EXPECT_STREQ(kina_last_error(), "main thread error");
  EXPECT_EQ(kina_rt_last_status(), 3);
  kina_rt_begin_call();
}

TEST(RuntimeStatus, ShapeErrorSubstitutesPlaceholdersOnly) {
  kina_rt_begin_call();
  EXPECT_EQ(kina_rt_shape_error("dim {0} of %s is {1}, want {0}; {2} {1}{0} {",
                                3, -4),
            1);
  EXPECT_EQ(kina_rt_last_status(), 1);
  EXPECT_STREQ(kina_last_error(), "dim 3 of %s is -4, want 3; {2} -43 {");

  EXPECT_EQ(kina_rt_shape_error("%d %s %n{1", INT64_MIN, INT64_MAX), 1);
  EXPECT_STREQ(kina_last_error(), "%d %s %n{1");

  EXPECT_EQ(kina_rt_shape_error("{0}|{1}", INT64_MIN, INT64_MAX), 1);
  EXPECT_STREQ(kina_last_error(), "-9223372036854775808|9223372036854775807");

  EXPECT_EQ(kina_rt_shape_error("", 1, 2), 1);
  EXPECT_STREQ(kina_last_error(), "");
  EXPECT_EQ(kina_rt_last_status(), 1);
  kina_rt_begin_call();
}

TEST(RuntimeStatus, ShapeErrorWithNullTemplateIsGeneric) {
  kina_rt_begin_call();
  EXPECT_EQ(kina_rt_shape_error(nullptr, 12, 34), 1);
  EXPECT_EQ(kina_rt_last_status(), 1);
  std::string message = kina_last_error();
  EXPECT_NE(message.find("shape"), std::string::npos) << message;
  EXPECT_NE(message.find("12"), std::string::npos) << message;
  EXPECT_NE(message.find("34"), std::string::npos) << message;
  kina_rt_begin_call();
}

} // namespace
