//===- main.cpp - The kinac executable ------------------------------------===//
//
// A thin main: everything, option parsing included, lives in the
// kina_driver library (src/driver/, Driver.h's runDriver), which returns
// the exit code instead of calling exit().
//
//===----------------------------------------------------------------------===//
#include "kina/Driver.h"

int main(int argc, char **argv) { return kina::runDriver(argc, argv); }
