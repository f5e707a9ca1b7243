// The test binary's global operator new and delete (every form, so that new and delete always
// meet: malloc and free, which the sanitizers still watch), with HostAllocFailure's injection.
#include "host_alloc_faults.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

namespace {

struct Injection {
  uint64_t fail_at = 0;  // 0: disarmed
  uint64_t counted = 0;
  bool fired = false;
  bool persistent = false;  // every counted allocation from fail_at on fails
  bool inside = false;  // in the injector itself (dladdr, backtrace): not counted
};
thread_local Injection t_injection;

// The runtimes a call stack of rill's code passes through; any other shared library in the stack
// (the validation layer, LLVM, a driver) makes the allocation someone else's.
bool runtime_library(const char* path) {
  for (const char* name : {"libstdc++", "libc.so", "libgcc_s", "libasan", "libubsan", "libm.so"})
    if (std::strstr(path, name) != nullptr) return true;
  return false;
}

Dl_info g_self{};  // this executable
using Range = std::pair<uintptr_t, uintptr_t>;
std::vector<Range> g_not_counted;  // code whose allocations are left alone (below)

// nlohmann::json is not safe when memory runs out: its destructor moves a container's children
// onto a heap stack (allocating in a noexcept function: the process terminates), and a value whose
// container failed to allocate is later destroyed through a null pointer. Allocations inside its
// out-of-line functions are left alone; rill's own around them are failed. Its instances are
// local symbols, found in the executable's own symbol table.
void find_code_not_counted() {
  if (dladdr(reinterpret_cast<void*>(&find_code_not_counted), &g_self) == 0) return;
  const int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  void* map = fstat(fd, &st) == 0 ? mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  close(fd);
  if (map == MAP_FAILED) return;
  const auto* base = static_cast<const uint8_t*>(map);
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(base);
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(base + header->e_shoff);
  // A position-independent executable's symbols are offsets from where it was loaded; another's
  // are addresses.
  const uintptr_t load = header->e_type == ET_DYN ? reinterpret_cast<uintptr_t>(g_self.dli_fbase) : 0;
  for (int i = 0; i < header->e_shnum; ++i) {
    if (sections[i].sh_type != SHT_SYMTAB) continue;
    const auto* symbols = reinterpret_cast<const Elf64_Sym*>(base + sections[i].sh_offset);
    const char* names = reinterpret_cast<const char*>(base + sections[sections[i].sh_link].sh_offset);
    const size_t count = sections[i].sh_size / sizeof(Elf64_Sym);
    for (size_t k = 0; k < count; ++k)
      if (ELF64_ST_TYPE(symbols[k].st_info) == STT_FUNC && symbols[k].st_size > 0 &&
          std::strstr(names + symbols[k].st_name, "nlohmann") != nullptr) {
        const uintptr_t start = load + symbols[k].st_value;
        g_not_counted.emplace_back(start, start + symbols[k].st_size);
      }
  }
  munmap(map, size_t(st.st_size));
}

// Whether an allocation whose call stack passes `pc` may still be rill's: dladdr's symbol lookup
// is the injector's main cost (a drill classifies every allocation of hundreds of rounds), so each
// return address is classified once. An address in no loaded object is not kept: a library loaded
// later (the loader's drivers and layers come and go with instances) may be mapped there. Only the
// one armed thread reads and writes the table.
enum class Frame : uint8_t { kUnknown, kMayCount, kNotCounted };

Frame classify_frame(uintptr_t pc) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(pc), &info) == 0 || info.dli_fname == nullptr) return Frame::kUnknown;
  if (info.dli_fbase == g_self.dli_fbase) {
    for (const auto& [begin, end] : g_not_counted)
      if (pc >= begin && pc < end) return Frame::kNotCounted;
    return Frame::kMayCount;
  }
  if (!runtime_library(info.dli_fname)) return Frame::kNotCounted;
  // libstdc++'s directory iterator allocates where an exception terminates (GCC 12).
  if (info.dli_sname != nullptr && std::strstr(info.dli_sname, "10filesystem") != nullptr) return Frame::kNotCounted;
  return Frame::kMayCount;
}

struct FrameVerdict {
  uintptr_t pc = 0;  // 0: empty slot
  Frame frame = Frame::kUnknown;
};
constexpr size_t kVerdictSlots = 1 << 14;
FrameVerdict g_verdicts[kVerdictSlots];

bool frame_allows_counting(uintptr_t pc) {
  for (size_t slot = (pc >> 2) % kVerdictSlots, probes = 0; probes < 16; slot = (slot + 1) % kVerdictSlots, ++probes) {
    FrameVerdict& v = g_verdicts[slot];
    if (v.pc == pc) return v.frame != Frame::kNotCounted;
    if (v.pc == 0) {
      const Frame frame = classify_frame(pc);
      if (frame != Frame::kUnknown) v = FrameVerdict{pc, frame};
      return frame != Frame::kNotCounted;
    }
  }
  return classify_frame(pc) != Frame::kNotCounted;  // a crowded neighbourhood: classified each time
}

[[gnu::noinline]] bool rills_own_allocation() {
  void* frames[24];
  const int depth = backtrace(frames, 24);
  for (int i = 0; i < depth; ++i)
    if (!frame_allows_counting(reinterpret_cast<uintptr_t>(frames[i]))) return false;
  return true;
}

// Whether this allocation is the one to fail.
bool injected_failure() {
  Injection& t = t_injection;
  if (t.fail_at == 0 || t.inside || (t.fired && !t.persistent)) return false;
  t.inside = true;
  const bool counts = rills_own_allocation();
  t.inside = false;
  if (!counts) return false;
  const bool fail = ++t.counted >= t.fail_at;
  t.fired = t.fired || fail;
  return fail;
}

void* allocate(std::size_t size, std::size_t align) {
  if (injected_failure()) return nullptr;
  if (size == 0) size = 1;
  if (align <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) return std::malloc(size);
  return std::aligned_alloc(align, (size + align - 1) / align * align);
}

void* allocate_or_throw(std::size_t size, std::size_t align) {
  void* p = allocate(size, align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

namespace rill_test {

HostAllocFailure::HostAllocFailure(uint64_t n, HostAllocMode mode) {
  // backtrace loads its unwinder on first use, allocating: done here, not inside an allocation.
  void* warm[2];
  (void)backtrace(warm, 2);
  static const bool found = (find_code_not_counted(), !g_not_counted.empty());
  if (!found) throw std::runtime_error("host_alloc_faults: no nlohmann::json function in this executable's symbols");
  t_injection = Injection{.fail_at = n, .persistent = mode == HostAllocMode::kFromThenOn};
}
HostAllocFailure::~HostAllocFailure() { t_injection = Injection{}; }
uint64_t HostAllocFailure::counted() const { return t_injection.counted; }
bool HostAllocFailure::fired() const { return t_injection.fired; }

}  // namespace rill_test

constexpr std::size_t kPlain = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

void* operator new(std::size_t size) { return allocate_or_throw(size, kPlain); }
void* operator new[](std::size_t size) { return allocate_or_throw(size, kPlain); }
void* operator new(std::size_t size, std::align_val_t a) { return allocate_or_throw(size, std::size_t(a)); }
void* operator new[](std::size_t size, std::align_val_t a) { return allocate_or_throw(size, std::size_t(a)); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate(size, kPlain); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate(size, kPlain); }
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(size, std::size_t(a));
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(size, std::size_t(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
