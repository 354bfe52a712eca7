// The one Catch2 main: compiled once, linked into the unit-test binary.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
