// ByteBudget: a bound on the bytes the server holds for clients at once (issue 34). Whoever is
// about to hold bytes for a client — a request body being read, an answer being built or sent,
// an SSE queue — reserves them first and gives them back when they are gone, so no mix of
// concurrent requests can take the server's memory past `capacity` (docs/memory-budget.md).
//
// A reservation either fits or is refused: TryReserve answers at once, Reserve waits up to a
// deadline for others to give bytes back (a request that would pass the budget waits, then
// fails clearly). A request larger than the whole budget is refused at once, never waits.
//
// Thread-safety: every method from any thread. A Reservation gives its bytes back when
// destroyed, on any thread, also after the budget is gone (it shares the budget's state).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace sandbox {

class ByteBudget {
  struct State {
    std::mutex mu;
    std::condition_variable freed;
    std::int64_t in_use = 0;
    std::int64_t peak = 0;
    std::int64_t refused = 0;  // reservations refused since start
  };

 public:
  // Bytes held against the budget; movable, gives them back when destroyed or Release()d.
  class Reservation {
   public:
    Reservation() = default;
    ~Reservation() { Release(); }
    Reservation(Reservation&& other) noexcept;
    Reservation& operator=(Reservation&& other) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;

    std::int64_t bytes() const { return bytes_; }
    // Holds `more` bytes besides, without waiting; false (nothing changes) when they do not fit.
    bool TryGrow(std::int64_t more);
    // Gives `less` bytes back now (an answer sent in pieces); at most what is held.
    void Shrink(std::int64_t less);
    void Release();

   private:
    friend class ByteBudget;
    Reservation(std::shared_ptr<State> state, std::int64_t capacity, std::int64_t bytes)
        : state_(std::move(state)), capacity_(capacity), bytes_(bytes) {}
    std::shared_ptr<State> state_;
    std::int64_t capacity_ = 0;
    std::int64_t bytes_ = 0;
  };

  // The configuration key that sets `capacity`, for refusal messages.
  explicit ByteBudget(std::int64_t capacity, std::string key = "memory.inflight_bytes")
      : capacity_(capacity), key_(std::move(key)), state_(std::make_shared<State>()) {}

  // `bytes` held at once, or nullopt when they do not fit now.
  std::optional<Reservation> TryReserve(std::int64_t bytes);
  // Waits up to `wait` for `bytes` to fit; nullopt when they did not (at once when `bytes`
  // exceeds the whole capacity).
  std::optional<Reservation> Reserve(std::int64_t bytes, std::chrono::milliseconds wait);

  std::int64_t capacity() const { return capacity_; }
  std::int64_t in_use() const;
  std::int64_t peak() const;     // the most held at once since start
  std::int64_t refused() const;  // reservations refused since start

  // What a refused caller is told, e.g. "the answer needs 77.6 MiB but the server holds
  // 1.9 GiB of its 2.0 GiB for clients now (memory.inflight_bytes); retry later".
  std::string RefusalMessage(std::int64_t bytes, std::string_view what = "the answer") const;

 private:
  bool FitsLocked(std::int64_t bytes) const;
  const std::int64_t capacity_;
  const std::string key_;
  std::shared_ptr<State> state_;
};

}  // namespace sandbox
