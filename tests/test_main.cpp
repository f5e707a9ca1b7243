// Catch2 main for rill's tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
