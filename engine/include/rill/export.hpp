// Symbol visibility for the rill shared library: everything is hidden unless marked RILL_API.
// GCC and Clang get the standard attribute syntax, which may follow [[nodiscard]] in a class head
// (a MinGW __declspec, which expands to __attribute__, may not).
#pragma once

#if defined(RILL_STATIC_DEFINE)
#define RILL_API
#elif defined(_WIN32) && defined(_MSC_VER)
#if defined(RILL_BUILDING_LIBRARY)
#define RILL_API __declspec(dllexport)
#else
#define RILL_API __declspec(dllimport)
#endif
#elif defined(_WIN32)
#if defined(RILL_BUILDING_LIBRARY)
#define RILL_API [[gnu::dllexport]]
#else
#define RILL_API [[gnu::dllimport]]
#endif
#else
#define RILL_API [[gnu::visibility("default")]]
#endif
