//===- VersionTest.cpp - kina_rt_check_version and kina_runtime_version ---===//
//
// Tests the runtime half of the version stamp: an object's entries pass the
// ABI version they were compiled for to kina_rt_check_version on their first
// call; the runtime accepts its own KINA_ABI_VERSION silently and refuses any
// other with status 1 and a message naming the entry and both versions.
//
//===----------------------------------------------------------------------===//
#include "kina/RuntimeConfig.h"
#include "kina/runtime.h"

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(RuntimeVersion, RuntimeVersionIsTheBuildVersion) {
  EXPECT_STREQ(kina_runtime_version(), KINA_RUNTIME_VERSION);
  EXPECT_GT(std::string(kina_runtime_version()).size(), 0u);
}

TEST(RuntimeVersion, SameAbiPasses) {
  kina_rt_begin_call();
  EXPECT_EQ(kina_rt_check_version("kina_f", KINA_ABI_VERSION, "kinac 0.0.1"),
            KINA_STATUS_SUCCESS);
  EXPECT_EQ(kina_rt_last_status(), KINA_STATUS_SUCCESS);
  EXPECT_STREQ(kina_last_error(), "");
}

TEST(RuntimeVersion, OtherAbiFailsWithBothVersions) {
  kina_rt_begin_call();
  int32_t other = KINA_ABI_VERSION + 1;
  EXPECT_EQ(
      kina_rt_check_version("kina_forward", other, "kinac 9.9.9, Kina ABI 2"),
      KINA_STATUS_VALIDATION_ERROR);
  EXPECT_EQ(kina_rt_last_status(), KINA_STATUS_VALIDATION_ERROR);
  std::string message = kina_last_error();
  EXPECT_NE(message.find("kina_forward: this object was compiled by kinac "
                         "9.9.9, Kina ABI 2"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("from kinac " KINA_RUNTIME_VERSION " (Kina ABI " +
                         std::to_string(KINA_ABI_VERSION) + ")"),
            std::string::npos)
      << message;
}

TEST(RuntimeVersion, NullStringsAreReplaced) {
  kina_rt_begin_call();
  EXPECT_EQ(kina_rt_check_version(nullptr, -1, nullptr),
            KINA_STATUS_VALIDATION_ERROR);
  std::string message = kina_last_error();
  EXPECT_EQ(message.rfind("?: this object was compiled by ?", 0), 0u)
      << message;
}

} // namespace
