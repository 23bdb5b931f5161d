// The times of a request's token events, kept compact: each time as the difference from the
// one before (the first from 0), zigzag-encoded, in a base-128 varint. A gap of under a
// millisecond takes 3 bytes instead of 8, so a 20,000-event answer costs ~60 KB, not 160 KB.
// Read in order through the iterator; front() and back() are kept apart for O(1) access.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

namespace dyno::metrics {

class EventTimes {
 public:
  /// A forward iterator over the absolute times (ns), decoded as it advances.
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::int64_t;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::int64_t*;
    using reference = const std::int64_t&;

    const_iterator() = default;
    reference operator*() const { return value_; }
    pointer operator->() const { return &value_; }
    const_iterator& operator++() {
      if (--remaining_ > 0) value_ = add(value_, decode(p_));
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const const_iterator& o) const { return remaining_ == o.remaining_; }

   private:
    friend class EventTimes;
    const_iterator(const unsigned char* p, std::size_t remaining) : p_(p), remaining_(remaining) {
      if (remaining_ > 0) value_ = decode(p_);
    }
    const unsigned char* p_ = nullptr;
    std::size_t remaining_ = 0;
    std::int64_t value_ = 0;
  };

  EventTimes() = default;
  EventTimes(std::initializer_list<std::int64_t> times) {
    for (const std::int64_t t : times) push_back(t);
  }
  explicit EventTimes(const std::vector<std::int64_t>& times) {
    for (const std::int64_t t : times) push_back(t);
  }
  EventTimes& operator=(std::initializer_list<std::int64_t> times) {
    clear();
    for (const std::int64_t t : times) push_back(t);
    return *this;
  }

  void push_back(std::int64_t t) {
    // The difference wraps like two's complement; decoding wraps back to the same time.
    const auto delta = static_cast<std::uint64_t>(t) - static_cast<std::uint64_t>(back_);
    std::uint64_t z = (delta << 1) ^ (0 - (delta >> 63));  // zigzag
    while (z >= 0x80) {
      bytes_.push_back(static_cast<char>((z & 0x7F) | 0x80));
      z >>= 7;
    }
    bytes_.push_back(static_cast<char>(z));
    if (size_ == 0) front_ = t;
    back_ = t;
    ++size_;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::int64_t front() const { return front_; }  ///< only when !empty()
  std::int64_t back() const { return back_; }    ///< only when !empty()
  const_iterator begin() const { return {data(), size_}; }
  const_iterator end() const { return {}; }

  void clear() {
    bytes_.clear();
    size_ = 0;
    front_ = 0;
    back_ = 0;
  }
  /// Adds `ns` to every time (a record moved to another time base).
  void shift(std::int64_t ns) {
    EventTimes moved;
    for (const std::int64_t t : *this) moved.push_back(add(t, ns));
    *this = std::move(moved);
  }
  std::vector<std::int64_t> to_vector() const { return {begin(), end()}; }
  /// Bytes held for the times (not counting the object itself).
  std::size_t encoded_bytes() const { return bytes_.size(); }

  bool operator==(const EventTimes& o) const {
    return size_ == o.size_ && front_ == o.front_ && back_ == o.back_ && bytes_ == o.bytes_;
  }
  friend bool operator==(const EventTimes& a, const std::vector<std::int64_t>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  const unsigned char* data() const {
    return reinterpret_cast<const unsigned char*>(bytes_.data());
  }
  /// a + b, wrapping like two's complement (the encoding's arithmetic).
  static std::int64_t add(std::int64_t a, std::int64_t b) {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  }
  static std::int64_t decode(const unsigned char*& p) {
    std::uint64_t z = 0;
    for (int shift = 0;; shift += 7) {
      const unsigned char b = *p++;
      z |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (b < 0x80) break;
    }
    return static_cast<std::int64_t>((z >> 1) ^ (0 - (z & 1)));
  }

  std::string bytes_;
  std::size_t size_ = 0;
  std::int64_t front_ = 0;
  std::int64_t back_ = 0;
};

}  // namespace dyno::metrics
