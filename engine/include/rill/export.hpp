// Symbol visibility for the rill shared library: everything is hidden unless marked RILL_API.
#pragma once

#if defined(RILL_STATIC_DEFINE)
#define RILL_API
#elif defined(_WIN32)
#if defined(RILL_BUILDING_LIBRARY)
#define RILL_API __declspec(dllexport)
#else
#define RILL_API __declspec(dllimport)
#endif
#else
#define RILL_API [[gnu::visibility("default")]]
#endif
