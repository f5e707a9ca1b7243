// Leaving an object alive for ever on purpose: memory the GPU may still use after a failed wait is
// never freed under it. The object is handed to LeakSanitizer as intended (where it runs), so
// sanitizer builds still report every leak that is not.
#pragma once

#include <memory>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define RILL_HAS_LSAN 1
#endif
#endif
#if !defined(RILL_HAS_LSAN) && defined(__SANITIZE_ADDRESS__)
#define RILL_HAS_LSAN 1
#endif

#ifdef RILL_HAS_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace rill::detail {

// Takes ownership and never frees; null is allowed.
template <typename T>
void leak_deliberately(std::unique_ptr<T> object) {
  T* raw = object.release();
#ifdef RILL_HAS_LSAN
  if (raw != nullptr) __lsan_ignore_object(raw);
#else
  (void)raw;
#endif
}

}  // namespace rill::detail
