//===- main.cpp - The kinac executable
//-------------------------------------===//
//
// A thin main: everything, option parsing included, lives in Driver.cpp so
// that nothing below it calls exit().
//
//===----------------------------------------------------------------------===//
#include "kina/Driver.h"

int main(int argc, char **argv) { return kina::runDriver(argc, argv); }
