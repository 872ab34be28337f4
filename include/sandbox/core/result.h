// Result<T>: a value or an Error, in the spirit of std::expected (C++23), which C++20 lacks.
// Status is Result<void>. Accessing value() of a failed result is a bug and aborts.
#pragma once

#include <cstdlib>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "sandbox/core/error.h"

namespace sandbox {

template <typename T>
class [[nodiscard]] Result {
 public:
  // Implicit by design: `return value;` and `return error;` both make a Result.
  // NOLINTNEXTLINE(google-explicit-constructor)
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return Checked(), std::get<0>(state_); }
  const T& value() const& { return Checked(), std::get<0>(state_); }
  T&& value() && { return Checked(), std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    if (ok()) std::abort();
    return std::get<1>(state_);
  }

  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? std::get<0>(state_) : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  void Checked() const {
    if (!ok()) std::abort();
  }
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const {
    if (ok()) std::abort();
    return *error_;
  }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

inline Status OkStatus() { return {}; }

}  // namespace sandbox

// Returns the error of `expr` (a Result) from the enclosing function when it failed.
#define SANDBOX_CONCAT_INNER_(a, b) a##b
#define SANDBOX_CONCAT_(a, b) SANDBOX_CONCAT_INNER_(a, b)
#define SANDBOX_RETURN_IF_ERROR(expr) \
  SANDBOX_RETURN_IF_ERROR_IMPL_(SANDBOX_CONCAT_(sandbox_status_, __COUNTER__), expr)
// `var` names a declared variable, so it cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define SANDBOX_RETURN_IF_ERROR_IMPL_(var, expr) \
  do {                                           \
    auto var = (expr);                           \
    if (!var.ok()) return var.error();           \
  } while (0)
// NOLINTEND(bugprone-macro-parentheses)
