// Leaving an object alive for ever on purpose: memory the GPU may still use after a failed wait is
// never freed under it. The object is handed to LeakSanitizer as intended (where it runs), so
// sanitizer builds still report every leak that is not.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>

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

// Room for leak_without_allocating: a static arena, which the leak sanitizer scans as a root.
// Null once the arena is full.
inline void* leak_arena_take(std::size_t size, std::size_t align) noexcept {
  alignas(std::max_align_t) static unsigned char arena[1 << 16];
  static std::atomic<std::size_t> used{0};
  std::size_t at = used.load(), start = 0;
  do {
    start = (at + align - 1) / align * align;
    if (start + size > sizeof(arena)) return nullptr;
  } while (!used.compare_exchange_weak(at, start + size));
  return arena + start;
}

// leak_deliberately for when host memory has run out: `object` is moved into the static arena and
// never destroyed. Past the arena's 64 KiB (a process that leaked this much has worse trouble) it
// is moved into this frame and never destroyed: what it owns is leaked, and a sanitizer reports it.
template <typename T>
void leak_without_allocating(T&& object) noexcept {
  using V = std::decay_t<T>;
  static_assert(std::is_nothrow_move_constructible_v<V>);
  static_assert(alignof(V) <= alignof(std::max_align_t), "the arena is aligned for max_align_t");
  if (void* at = leak_arena_take(sizeof(V), alignof(V))) {
    new (at) V(std::move(object));
    return;
  }
  alignas(V) unsigned char kept[sizeof(V)];
  new (kept) V(std::move(object));
}

}  // namespace rill::detail
