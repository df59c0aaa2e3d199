// Maps and dicts across the runtime and C++ code compiled against tvm-ffi's headers, which
// hash, find, insert and erase inline: maps the runtime builds (its `ffi.Map` / `ffi.Dict`
// globals) are read and changed here with `Map` / `Dict`, and maps built here are read and
// changed by the runtime's globals, in both layouts (up to four pairs small, then dense) and
// across the move from one to the other. Prints OK, or what differed, and exits non-zero.
#include <tvm/ffi/any.h>
#include <tvm/ffi/container/dict.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdio>
#include <string>
#include <vector>

using tvm::ffi::Any;
using tvm::ffi::Dict;
using tvm::ffi::Function;
using tvm::ffi::Map;
using tvm::ffi::String;

static int failures = 0;

#define EXPECT(cond, what)                                   \
  do {                                                       \
    if (!(cond)) {                                           \
      std::printf("FAIL %s (line %d)\n", what, __LINE__);    \
      if (++failures > 20) return;                           \
    }                                                        \
  } while (0)

// Key number i: an int, a short string (held in the value) or a long one, in turn.
static Any Key(int i) {
  switch (i % 3) {
    case 0:
      return Any(static_cast<int64_t>(i) * 7919);
    case 1:
      return Any(String("k" + std::to_string(i)));
    default:
      return Any(String("a parameter name " + std::to_string(i)));
  }
}

static Function Global(const char* name) { return Function::GetGlobal(name).value(); }

// A map of n pairs (Key(i) -> i) built by the runtime's `ffi.Map` (or `ffi.Dict`).
static Any RuntimeMap(const char* ctor, int n) {
  std::vector<tvm::ffi::AnyView> args;
  std::vector<Any> keys;
  for (int i = 0; i < n; ++i) keys.push_back(Key(i));
  std::vector<Any> values;
  for (int i = 0; i < n; ++i) values.push_back(Any(static_cast<int64_t>(i)));
  for (int i = 0; i < n; ++i) {
    args.push_back(keys[i]);
    args.push_back(values[i]);
  }
  Any result;
  Global(ctor).CallPacked(args.data(), static_cast<int32_t>(args.size()), &result);
  return result;
}

// C++ finds every key of a runtime-built map, misses others, and walks it in order; then
// changes a copy (copy on write: the runtime's map is left as it was).
static void CxxReadsRuntimeMaps(int n) {
  Map<Any, Any> m = RuntimeMap("ffi.Map", n).cast<Map<Any, Any>>();
  EXPECT(static_cast<int>(m.size()) == n, "size of a runtime map");
  for (int i = 0; i < n; ++i) {
    auto it = m.find(Key(i));
    EXPECT(it != m.end() && (*it).second.cast<int64_t>() == i, "C++ finds a runtime map's key");
  }
  for (int i = n; i < n + 50; ++i) EXPECT(m.count(Key(i)) == 0, "C++ misses an absent key");
  int i = 0;
  for (auto kv : m) {
    EXPECT(kv.second.cast<int64_t>() == i, "a runtime map in insertion order");
    ++i;
  }
  Map<Any, Any> copy = m;
  copy.Set(Key(n + 1000), Any(static_cast<int64_t>(n)));
  copy.erase(Key(0));
  EXPECT(m.size() == static_cast<size_t>(n) && m.count(Key(0)) == (n > 0 ? 1u : 0u), "the original is kept");
  EXPECT(copy.count(Key(n + 1000)) == 1 && copy.count(Key(0)) == 0, "the copy changed");
}

// The runtime finds every key of a map C++ built (small and dense, grown pair by pair).
static void RuntimeReadsCxxMaps(int n) {
  Map<Any, Any> m;
  for (int i = 0; i < n; ++i) m.Set(Key(i), Any(static_cast<int64_t>(i)));
  Function get = Global("ffi.MapGetItem"), count = Global("ffi.MapCount");
  for (int i = 0; i < n; ++i) {
    EXPECT(get(m, Key(i)).cast<int64_t>() == i, "the runtime finds a C++ map's key");
  }
  for (int i = n; i < n + 50; ++i) EXPECT(count(m, Key(i)).cast<int64_t>() == 0, "the runtime misses");
}

// A dict changed by both sides in turn: the runtime sets and erases, C++ sets (in place, the
// dict growing from small to dense) and erases; each side then finds what the other did.
static void DictsChangedByBoth(int n) {
  Dict<Any, Any> d = RuntimeMap("ffi.Dict", 0).cast<Dict<Any, Any>>();
  Function set = Global("ffi.DictSetItem"), erase = Global("ffi.DictErase");
  Function get = Global("ffi.DictGetItem"), count = Global("ffi.DictCount");
  for (int i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      set(d, Key(i), Any(static_cast<int64_t>(i)));
    } else {
      d.Set(Key(i), Any(static_cast<int64_t>(i)));
    }
  }
  EXPECT(static_cast<int>(d.size()) == n, "a dict set by both");
  for (int i = 0; i < n; ++i) {
    auto it = d.find(Key(i));
    EXPECT(it != d.end() && (*it).second.cast<int64_t>() == i, "C++ finds what either set");
    EXPECT(get(d, Key(i)).cast<int64_t>() == i, "the runtime finds what either set");
  }
  for (int i = 0; i < n; i += 3) {
    if (i % 2 == 0) {
      erase(d, Key(i));
    } else {
      d.erase(Key(i));
    }
  }
  for (int i = 0; i < n; ++i) {
    bool kept = i % 3 != 0;
    EXPECT((d.count(Key(i)) == 1) == kept, "C++ sees what either erased");
    EXPECT((count(d, Key(i)).cast<int64_t>() == 1) == kept, "the runtime sees what either erased");
  }
}

int main() {
  for (int n : {0, 1, 3, 4, 5, 17, 100, 1000}) {
    CxxReadsRuntimeMaps(n);
    RuntimeReadsCxxMaps(n);
    DictsChangedByBoth(n);
    if (failures) {
      std::printf("(at %d pairs)\n", n);
      return 1;
    }
  }
  std::printf("OK\n");
  return 0;
}
