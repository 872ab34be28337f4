// SlotLimiter: a bound on how many holders something has at once, taken without waiting: a
// caller either gets a slot at once or is refused. The HTTP server bounds with one the requests
// that hold a worker thread for long (SSE streams, runs in progress): each takes a slot or is
// answered 503, and the server has a worker per slot on top of those for ordinary requests, so
// long requests can never take every worker (http/server_setup.h).
//
// Slots may also be taken in a key's name (a principal: the bearer token's name). Then a second
// bound, `per_key_capacity`, caps the slots one key holds, so one token can never hold every
// slot of the server-wide bound and starve the others.
//
// Thread-safety: every method from any thread. A slot is released when its last shared_ptr goes,
// on any thread, also after the limiter is gone.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace sandbox {

class SlotLimiter {
  struct State {
    std::mutex mu;
    std::size_t in_use = 0;
    std::map<std::string, std::size_t, std::less<>> per_key;  // only keys holding slots
  };

 public:
  // One held place; gives it back when destroyed.
  class Slot {
   public:
    ~Slot();
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    friend class SlotLimiter;
    Slot(std::shared_ptr<State> state, std::string key)
        : state_(std::move(state)), key_(std::move(key)) {}
    std::shared_ptr<State> state_;
    std::string key_;
  };

  // Why TryAcquire refused: every slot is held, or the key holds its share.
  enum class Refusal { kNone, kCapacity, kPerKey };

  // The configuration names of the two bounds, for refusal messages.
  struct Names {
    std::string capacity = "server.max_streams";
    std::string per_key = "per_principal.max_streams";
  };

  // per_key_capacity 0: keys have no bound of their own (only `capacity`).
  explicit SlotLimiter(std::size_t capacity, std::size_t per_key_capacity = 0)
      : SlotLimiter(capacity, per_key_capacity, Names()) {}
  SlotLimiter(std::size_t capacity, std::size_t per_key_capacity, Names names)
      : capacity_(capacity),
        per_key_capacity_(per_key_capacity),
        names_(std::move(names)),
        state_(std::make_shared<State>()) {}

  // A slot, or nullptr when all `capacity` are held or `key` (non-empty) holds
  // `per_key_capacity`; `why` (optional) says which. Shared, so copyable callbacks (httplib's
  // content providers are std::function) can hold it for as long as they live.
  std::shared_ptr<Slot> TryAcquire(std::string_view key = {}, Refusal* why = nullptr);

  std::size_t capacity() const { return capacity_; }
  std::size_t per_key_capacity() const { return per_key_capacity_; }
  std::size_t in_use() const;
  std::size_t in_use(std::string_view key) const;

  // What a refused caller is told, naming the bound and its configuration key, e.g. "256
  // streams are open, the most this server serves at once (server.max_streams); retry later".
  std::string RefusalMessage(Refusal why, std::string_view what = "streams") const;

 private:
  const std::size_t capacity_;
  const std::size_t per_key_capacity_;
  const Names names_;
  std::shared_ptr<State> state_;
};

}  // namespace sandbox
