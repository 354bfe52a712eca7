//===- ProgramBinary.h - A Program as bytes --------------------*- C++ -*-===//
//
// The one reader and writer of a Program's binary form, used by compiled-
// model packages (runtime/Package.h): every field, kernel sources included,
// but no constant data (a package stores each constant's bytes in an
// aligned section of its own, so it can be mapped). planJson() is the form
// for people. A change to this layout (a new Program field) bumps
// kPackageFormatVersion (runtime/Package.h), so that an older package is
// refused by name rather than misread.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CORE_PROGRAMBINARY_H
#define FUSEC_RUNTIME_CORE_PROGRAMBINARY_H

#include "runtime/core/Program.h"

#include <string>
#include <string_view>

namespace fusec {

/// `program` as bytes, its constants' data left out.
std::string encodeProgram(const Program &program);

/// The program encodeProgram wrote, its constants without data. Throws
/// fusec::Error starting with `what` when the bytes are truncated, hold a
/// value no Program has (an unknown dtype, role or step kind), or describe
/// an inconsistent program (checkProgram).
Program decodeProgram(std::string_view bytes, const std::string &what);

/// Throws fusec::Error starting with `what` unless every buffer id and
/// step in `program` is in range, every shape is non-negative and at most
/// 2^48 elements (2^56 bytes in all), aliases name earlier buffers of at
/// least their size, graph inputs are the input buffers and each output has
/// a name: what planning memory and running the program rely on before
/// Executable checks that each kernel and call runs once and fits.
void checkProgram(const Program &program, const std::string &what);

} // namespace fusec

#endif
