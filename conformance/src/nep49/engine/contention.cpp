#include "nep49/engine/contention.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace emm::conformance::nep49_engine {
namespace {

constexpr int kBlocksPerThread = 4;
// A published block is one 64-bit word: its address (below 2^47, user space on x86-64 and
// AArch64) and its size (below 2^17), so that a reader never sees half of an update.
constexpr unsigned kSizeBits = 17;
constexpr std::uint64_t kAddressLimit = std::uint64_t{1} << 47;
constexpr int kSustainFactor = 4;  // a thread stops after this many times `rounds` regardless

std::uint64_t pack(const void* p, std::size_t size) {
  const auto address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
  if (address >= kAddressLimit || size >= (std::size_t{1} << kSizeBits)) return 0;
  return (address << kSizeBits) | size;
}

struct Random {
  std::uint32_t state;
  std::uint32_t next() {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
  }
  std::uint32_t below(std::uint32_t n) { return next() % n; }
};

// Mostly the small size classes NumPy's small arrays use, some pages, a few larger blocks.
std::size_t contention_size(Random& random) {
  const std::uint32_t r = random.below(10);
  if (r < 6) return 24 + random.below(233);
  if (r < 9) return 257 + random.below(3840);
  return 4097 + random.below(61440);
}

struct Held {
  void* p = nullptr;
  std::size_t size = 0;
  unsigned token = 0;
};

std::string strip_clause(std::string text) {
  if (text.starts_with("[")) {
    if (const std::size_t end = text.find("] "); end != std::string::npos) text.erase(0, end + 2);
  }
  return text;
}

class Workload {
 public:
  Workload(Session& session, const ContentionPlan& plan)
      : run_(session.run()),
        handler_(session.handler(plan.handler)),
        plan_(plan),
        slots_(static_cast<std::size_t>(plan.threads) * kBlocksPerThread + 1),
        waiting_(plan.threads) {
    for (const Block& block : session.blocks()) {
      if (block.pointer != nullptr) outside_.push_back(&block);
    }
  }

  ContentionReport run() {
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(plan_.threads));
    for (int t = 0; t < plan_.threads; ++t) threads.emplace_back([this, t] { body(t); });
    for (std::thread& thread : threads) thread.join();
    if (failure_.empty() && exchange_) {
      const Held last = *exchange_;
      if (const std::size_t bad = first_difference_direct(last.p, last.size, last.token);
          bad != last.size) {
        report(str("the block [", last.p, ", +", last.size,
                   ") passed between threads changed at byte ", bad, " while no thread held it"));
      } else {
        slots_.back().store(0);
        call_free(last);
      }
    }
    ContentionReport report;
    report.threads = plan_.threads;
    report.realloc_threads = plan_.threads / 2;
    report.rounds = plan_.rounds;
    report.calls = calls_.load();
    report.failure = failure_;
    return report;
  }

 private:
  // --- the handler's calls, as NumPy makes them ------------------------------------------------
  void* call_allocate(std::size_t size, bool zeroed) {
    std::lock_guard gil(gil_);
    calls_.fetch_add(1, std::memory_order_relaxed);
    return zeroed ? run_.calloc(handler_, size, 1) : run_.malloc(handler_, size);
  }
  void* call_realloc(void* p, std::size_t size, bool with_gil) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    if (!with_gil) return run_.realloc(handler_, p, size);
    std::lock_guard gil(gil_);
    void* result = nullptr;
    run_.subject().with_gil([&] { result = run_.realloc(handler_, p, size); });
    return result;
  }
  void call_free(const Held& block) {
    std::lock_guard gil(gil_);
    calls_.fetch_add(1, std::memory_order_relaxed);
    run_.free(handler_, block.p, block.size);
  }

  // --- checks ----------------------------------------------------------------------------------
  void report(std::string what) {
    std::lock_guard lock(failure_lock_);
    if (failure_.empty()) failure_ = std::move(what);
    stop_.store(true);
  }

  // Another live block sharing bytes with [p, p + size): a thread's, the one being passed
  // between threads, or one the sequence holds; "" when none.
  std::string clash(const void* p, std::size_t size) const {
    const auto begin = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t end = begin + size;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const std::uint64_t word = slots_[i].load(std::memory_order_acquire);
      if (word == 0) continue;
      const auto other = static_cast<std::uintptr_t>(word >> kSizeBits);
      const std::size_t other_size = word & ((std::uint64_t{1} << kSizeBits) - 1);
      if (other < end && begin < other + other_size) {
        const std::string whose =
            i + 1 == slots_.size()
                ? std::string("the block being passed between threads")
                : str("thread ", i / kBlocksPerThread, "'s live block");
        return str(whose, " [", reinterpret_cast<void*>(other), ", +", other_size, ")");
      }
    }
    for (const Block* block : outside_) {
      const auto other = reinterpret_cast<std::uintptr_t>(block->pointer);
      if (other < end && begin < other + block->size) {
        return str("the sequence's live ", describe(*block));
      }
    }
    return "";
  }

  bool intact(int t, const Held& block, const char* before) {
    const std::size_t bad = first_difference_direct(block.p, block.size, block.token);
    if (bad == block.size) return true;
    report(str("thread ", t, "'s block [", block.p, ", +", block.size, ") changed at byte ", bad,
               " while the thread held it, found before ", before,
               ": another thread was given the same memory, or the handler wrote into a live "
               "block; expected every live block to keep its bytes"));
    return false;
  }

  // --- one thread --------------------------------------------------------------------------------
  void publish(int t, std::size_t k, const Held& block) {
    slots_[static_cast<std::size_t>(t) * kBlocksPerThread + k].store(pack(block.p, block.size),
                                                                     std::memory_order_release);
  }
  void unpublish(int t, std::size_t k) {
    slots_[static_cast<std::size_t>(t) * kBlocksPerThread + k].store(0, std::memory_order_release);
  }
  // Removes mine[k], keeping the slots in step with the vector.
  void remove(int t, std::vector<Held>& mine, std::size_t k) {
    mine[k] = mine.back();
    mine.pop_back();
    if (k < mine.size()) publish(t, k, mine[k]);
    unpublish(t, mine.size());
  }

  bool allocate(int t, std::vector<Held>& mine, Random& random) {
    const std::size_t size = contention_size(random);
    const bool zeroed = random.below(4) == 0;
    void* p = call_allocate(size, zeroed);
    if (p == nullptr) {
      report(str("thread ", t, "'s ", zeroed ? "calloc(" : "malloc(", size, zeroed ? ", 1)" : ")",
                 " returned NULL while other threads were inside the handler; expected a block "
                 "(memory to spare)"));
      return false;
    }
    if (std::string other = clash(p, size); !other.empty()) {
      report(str("thread ", t, "'s ", zeroed ? "calloc(" : "malloc(", size, zeroed ? ", 1)" : ")",
                 " = [", p, ", +", size, ") overlaps ", other,
                 ", live at the same time: two threads were given the same memory"));
      return false;
    }
    const Held block{p, size, next_token_.fetch_add(1)};
    fill_direct(p, size, block.token);
    mine.push_back(block);
    publish(t, mine.size() - 1, block);
    return true;
  }

  bool reallocate(int t, std::vector<Held>& mine, Random& random, bool with_gil) {
    const std::size_t k = random.below(static_cast<std::uint32_t>(mine.size()));
    Held& block = mine[k];
    if (!intact(t, block, "a realloc")) return false;
    const std::size_t size = contention_size(random);
    unpublish(t, k);
    void* q = call_realloc(block.p, size, with_gil);
    const char* how = with_gil ? "holding the GIL" : "without the GIL";
    if (q == nullptr) {
      report(str("thread ", t, "'s realloc(", block.p, ", ", size, ") ", how,
                 " returned NULL while other threads were inside the handler; expected a block "
                 "(memory to spare)"));
      return false;
    }
    if (std::string other = clash(q, size); !other.empty()) {
      report(str("thread ", t, "'s realloc(", block.p, ", ", size, ") ", how, " = [", q, ", +",
                 size, ") overlaps ", other,
                 ", live at the same time: two threads were given the same memory"));
      return false;
    }
    const std::size_t kept = std::min(block.size, size);
    if (const std::size_t bad = first_difference_direct(q, kept, block.token); bad != kept) {
      report(str("thread ", t, "'s realloc from ", block.size, " to ", size, " bytes ", how,
                 " changed byte ", bad, "; expected the first ", kept,
                 " bytes kept while other threads were inside the handler"));
      return false;
    }
    block.p = q;
    block.size = size;
    fill_direct(q, size, block.token);
    publish(t, k, block);
    return true;
  }

  bool release(int t, std::vector<Held>& mine, Random& random) {
    const std::size_t k = random.below(static_cast<std::uint32_t>(mine.size()));
    const Held block = mine[k];
    if (!intact(t, block, "its free")) return false;
    remove(t, mine, k);
    call_free(block);
    return true;
  }

  // Gives one of this thread's blocks to the exchange and takes what another thread left there.
  bool exchange(int t, std::vector<Held>& mine, Random& random) {
    const std::size_t k = random.below(static_cast<std::uint32_t>(mine.size()));
    const Held given = mine[k];
    if (!intact(t, given, "passing it to another thread")) return false;
    std::optional<Held> taken;
    {
      std::lock_guard lock(exchange_lock_);
      taken = exchange_;
      exchange_ = given;
      unpublish(t, k);
      slots_.back().store(pack(given.p, given.size), std::memory_order_release);
    }
    if (!taken) {
      remove(t, mine, k);
      return true;
    }
    mine[k] = *taken;
    if (const std::size_t bad = first_difference_direct(taken->p, taken->size, taken->token);
        bad != taken->size) {
      report(str("thread ", t, " took the block [", taken->p, ", +", taken->size,
                 ") another thread passed it, and byte ", bad,
                 " had changed on the way: the handler gave the memory of a live block to "
                 "someone else"));
      return false;
    }
    publish(t, k, mine[k]);
    return true;
  }

  bool operation(int t, std::vector<Held>& mine, Random& random) {
    const bool reader = t < plan_.threads / 2;
    const std::uint32_t r = random.below(10);
    if (mine.empty() || (r >= 6 && r <= 7 && mine.size() < kBlocksPerThread)) {
      return allocate(t, mine, random);
    }
    // Readers realloc without the GIL most of the time; the others resize under it now and then.
    if (r < (reader ? 6u : 2u)) return reallocate(t, mine, random, !reader);
    if (r == 9) return exchange(t, mine, random);
    return release(t, mine, random);
  }

  void body(int t) {
    Random random{plan_.seed ^ (static_cast<std::uint32_t>(t) + 1u) * 0x9E3779B9u};
    if (random.state == 0) random.state = 1;
    std::vector<Held> mine;
    mine.reserve(kBlocksPerThread);
    waiting_.fetch_sub(1);
    while (waiting_.load() > 0) std::this_thread::yield();
    int done = 0;
    bool counted = false;
    try {
      while (!stop_.load(std::memory_order_relaxed)) {
        if (!counted && done >= plan_.rounds) {
          counted = true;
          finished_.fetch_add(1);
        }
        if (counted && (finished_.load() == plan_.threads || done >= kSustainFactor * plan_.rounds)) {
          break;
        }
        if (!operation(t, mine, random)) return;
        ++done;
      }
      if (stop_.load()) return;  // another thread failed: leave the handler alone
      while (!mine.empty()) {
        if (!intact(t, mine.back(), "its free")) return;
        const Held block = mine.back();
        unpublish(t, mine.size() - 1);
        mine.pop_back();
        call_free(block);
      }
    } catch (const std::exception& error) {
      report(str("thread ", t, ": ", strip_clause(error.what())));
    }
  }

  Nep49Run& run_;
  const nep49::Handler& handler_;
  const ContentionPlan plan_;
  std::mutex gil_;  // stands in for the GIL (CPython's is taken too when CPython is loaded)
  std::vector<std::atomic<std::uint64_t>> slots_;  // kBlocksPerThread per thread, then the exchange
  std::vector<const Block*> outside_;              // the sequence's live blocks
  std::mutex exchange_lock_;
  std::optional<Held> exchange_;  // guarded by exchange_lock_
  std::atomic<int> waiting_;
  std::atomic<int> finished_{0};
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> calls_{0};
  std::atomic<unsigned> next_token_{1u << 16};
  std::mutex failure_lock_;
  std::string failure_;  // guarded by failure_lock_ (read after the threads are joined)
};

}  // namespace

ContentionReport contend(Session& session, const ContentionPlan& plan) {
  Workload workload(session, plan);
  return workload.run();
}

const char* contention_cpp_helper() noexcept {
  return R"(// The certifier's contention workload: threads [0, threads / 2) realloc without the GIL,
// the others malloc/calloc/free under it (a mutex here), all from one barrier; every thread
// holds up to 4 blocks, passes some to other threads and checks their bytes before each call.
std::string contend(emm::nep49::Allocator* h, int threads, int rounds, std::uint32_t seed) {
  std::mutex gil, lock;
  std::string failure;
  std::optional<std::tuple<void*, std::size_t, unsigned>> passed;
  std::atomic<int> waiting{threads}, finished{0};
  std::atomic<unsigned> tokens{1u << 16};
  auto fail = [&](std::string what) { std::lock_guard g(lock); if (failure.empty()) failure = what; };
  auto size_of = [](std::uint32_t& x) {
    auto next = [&] { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x; };
    std::uint32_t r = next() % 10;
    return r < 6 ? 24 + next() % 233 : r < 9 ? 257 + next() % 3840 : 4097 + next() % 61440;
  };
  auto work = [&](int t) {
    std::uint32_t x = seed ^ (t + 1u) * 0x9E3779B9u;
    if (x == 0) x = 1;
    auto next = [&] { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x; };
    std::vector<std::tuple<void*, std::size_t, unsigned>> mine;
    waiting--;
    while (waiting > 0) std::this_thread::yield();
    bool counted = false;
    for (int done = 0;; ++done) {
      { std::lock_guard g(lock); if (!failure.empty()) return; }
      if (!counted && done >= rounds) { counted = true; finished++; }
      if (counted && (finished == threads || done >= 4 * rounds)) break;
      std::uint32_t r = next() % 10;
      if (mine.empty() || (r >= 6 && r <= 7 && mine.size() < 4)) {
        std::size_t n = size_of(x);
        bool zeroed = next() % 4 == 0;
        void* p;
        { std::lock_guard g(gil); p = zeroed ? h->calloc(h->ctx, n, 1) : h->malloc(h->ctx, n); }
        if (p == nullptr) return fail("malloc/calloc returned NULL");
        unsigned token = tokens++;
        fill(p, 0, n, token);
        mine.emplace_back(p, n, token);
        continue;
      }
      std::size_t k = next() % mine.size();
      auto [p, n, token] = mine[k];
      if (first_difference(p, 0, n, token) != n) return fail("a live block changed");
      if (r < (t < threads / 2 ? 6u : 2u)) {
        std::size_t m = size_of(x);
        void* q;
        if (t < threads / 2) q = h->realloc(h->ctx, p, m);
        else { std::lock_guard g(gil); q = h->realloc(h->ctx, p, m); }
        if (q == nullptr) return fail("realloc returned NULL");
        if (first_difference(q, 0, std::min(n, m), token) != std::min(n, m)) return fail("realloc lost bytes");
        fill(q, 0, m, token);
        mine[k] = {q, m, token};
      } else if (r == 9) {
        std::lock_guard g(lock);
        auto taken = passed;
        passed = mine[k];
        if (taken) mine[k] = *taken; else { mine[k] = mine.back(); mine.pop_back(); }
      } else {
        mine[k] = mine.back();
        mine.pop_back();
        std::lock_guard g(gil);
        h->free(h->ctx, p, n);
      }
    }
    for (auto [p, n, token] : mine) { std::lock_guard g(gil); h->free(h->ctx, p, n); }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& thread : pool) thread.join();
  if (passed && failure.empty()) h->free(h->ctx, std::get<0>(*passed), std::get<1>(*passed));
  return failure;
}
)";
}

const char* contention_python_helper() noexcept {
  return R"(def contend(h, threads, rounds, seed):
    """The certifier's contention workload (realloc threads call through ctypes.CFUNCTYPE, which
    releases the GIL; the others hold it): returns the first failure, or ''."""
    import threading
    state = {"failure": "", "passed": None, "finished": 0, "token": 1 << 16}
    lock = threading.Lock()
    barrier = threading.Barrier(threads)
    def size_of(rng):
        r = rng() % 10
        return 24 + rng() % 233 if r < 6 else 257 + rng() % 3840 if r < 9 else 4097 + rng() % 61440
    def work(t):
        x = [(seed ^ ((t + 1) * 0x9E3779B9)) & 0xFFFFFFFF or 1]
        def rng():
            v = x[0]
            v ^= (v << 13) & 0xFFFFFFFF; v ^= v >> 17; v ^= (v << 5) & 0xFFFFFFFF
            x[0] = v
            return v
        mine = []
        barrier.wait()
        counted, done = False, 0
        while not state["failure"]:
            if not counted and done >= rounds:
                counted = True
                with lock: state["finished"] += 1
            if counted and (state["finished"] == threads or done >= 4 * rounds):
                break
            done += 1
            r = rng() % 10
            if not mine or (6 <= r <= 7 and len(mine) < 4):
                n = size_of(rng)
                p = h.calloc(h.ctx, n, 1) if rng() % 4 == 0 else h.malloc(h.ctx, n)
                if not p:
                    state["failure"] = "malloc/calloc returned NULL"; return
                with lock:
                    token = state["token"]; state["token"] += 1
                fill(p, 0, n, token)
                mine.append((p, n, token))
                continue
            k = rng() % len(mine)
            p, n, token = mine[k]
            if first_difference(p, 0, n, token) != n:
                state["failure"] = "a live block changed"; return
            if r < (6 if t < threads // 2 else 2):
                m = size_of(rng)
                q = h.realloc(h.ctx, p, m)
                if not q:
                    state["failure"] = "realloc returned NULL"; return
                if first_difference(q, 0, min(n, m), token) != min(n, m):
                    state["failure"] = "realloc lost bytes"; return
                fill(q, 0, m, token)
                mine[k] = (q, m, token)
            elif r == 9:
                with lock:
                    taken, state["passed"] = state["passed"], mine[k]
                if taken: mine[k] = taken
                else: mine[k] = mine[-1]; mine.pop()
            else:
                mine[k] = mine[-1]; mine.pop()
                h.free(h.ctx, p, n)
        for p, n, token in mine:
            h.free(h.ctx, p, n)
    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for thread in pool: thread.start()
    for thread in pool: thread.join()
    if state["passed"] and not state["failure"]:
        h.free(h.ctx, state["passed"][0], state["passed"][1])
    return state["failure"]
)";
}

}  // namespace emm::conformance::nep49_engine
