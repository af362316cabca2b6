// The host side of ROCm's hostcall protocol (ockl's __ockl_hostcall_internal and the printf services built on it),
// as the device libraries of the toolchain implement it:
//   buffer:  headers*, payloads*, doorbell signal, free stack, ready stack, index mask (a packet index is the low
//            bits of a stack word; the high bits are an ABA tag the device maintains)
//   header:  next (stack link), active lane mask, service, control (bit 0: ready for the host)
//   payload: 8 words per lane; word 0 a message descriptor, words 1..7 its arguments; the host answers in words 0-1
// A message descriptor: bit 0 begins a message, bit 1 ends it, bits 7:5 count the argument words, bits 63:8 the
// message id the host handed out when it began. Index 0 is never a packet: it ends both stacks.
#include "host/hostcall.h"

#include <atomic>
#include <cstdio>
#include <cstring>

namespace vgpu {

struct HostcallBuffer::Control {
  uint64_t headers, payloads, doorbell, free_stack, ready_stack, index_mask;
};

namespace {

struct Header {
  uint64_t next, active_mask;
  uint32_t service, control;
};
using Payload = uint64_t[64][8];
constexpr uint32_t kServicePrintf = 2;
constexpr uint64_t kBegin = 1, kEnd = 2;

template <class T>
std::atomic_ref<T> atomic(T& x) { return std::atomic_ref<T>(x); }

}  // namespace

HostcallBuffer::HostcallBuffer(MemoryMap& memory, uint32_t packets) : memory_(memory) {
  uint64_t n = 2;
  while (n < uint64_t(packets) + 1) n *= 2;
  const size_t headers = n * sizeof(Header), payloads = n * sizeof(Payload), signal = 64;
  storage_.assign(sizeof(Control) + 64 + headers + payloads + signal + 64, 0);
  uint8_t* p = storage_.data() + (64 - uint64_t(storage_.data()) % 64) % 64;
  control_ = reinterpret_cast<Control*>(p);
  auto* header = reinterpret_cast<Header*>(p + 64);
  control_->headers = uint64_t(header);
  control_->payloads = uint64_t(p + 64 + headers);
  control_->doorbell = uint64_t(p + 64 + headers + payloads);  // an HSA signal with no event mailbox: no interrupt
  control_->index_mask = n - 1;
  for (uint64_t i = 1; i < n; ++i) header[i].next = i + 1 < n ? i + 1 : 0;
  control_->free_stack = 1;
  control_->ready_stack = 0;
  memory_.add(p, 64 + headers + payloads + signal, MemoryKind::dispatch);
}

HostcallBuffer::~HostcallBuffer() { memory_.release(control_); }

void HostcallBuffer::service() {
  std::lock_guard lock(mu_);
  const uint64_t mask = control_->index_mask;
  uint64_t top = atomic(control_->ready_stack).exchange(0, std::memory_order_acquire);
  auto* header = reinterpret_cast<Header*>(control_->headers);
  std::vector<uint64_t> ready;  // newest first
  for (uint64_t i = top & mask; i != 0 && ready.size() <= mask; i = header[i].next & mask) ready.push_back(i);
  for (auto it = ready.rbegin(); it != ready.rend(); ++it) answer(*it);
}

std::string HostcallBuffer::last_stderr_message() {
  std::lock_guard lock(mu_);
  return last_stderr_;
}

void HostcallBuffer::answer(uint64_t packet) {
  auto& h = reinterpret_cast<Header*>(control_->headers)[packet];
  auto& payload = reinterpret_cast<Payload*>(control_->payloads)[packet];
  for (int lane = 0; lane < 64; ++lane) {
    if (!(h.active_mask >> lane & 1)) continue;
    uint64_t* slot = payload[lane];
    if (h.service != kServicePrintf) {  // no other service is offered: answer zeros
      slot[0] = slot[1] = 0;
      continue;
    }
    const uint64_t desc = slot[0];
    uint64_t id = desc >> 8;
    if (desc & kBegin) id = next_message_++;
    auto& words = messages_[id];
    const uint64_t count = desc >> 5 & 7;
    words.insert(words.end(), slot + 1, slot + 1 + count);
    if (desc & kEnd) {
      finish_message(words);
      messages_.erase(id);
    }
    slot[0] = id << 8;
    slot[1] = 0;
  }
  atomic(h.control).fetch_and(~1u, std::memory_order_release);
}

void HostcallBuffer::finish_message(std::vector<uint64_t>& words) {
  if (words.empty()) return;
  const std::string text = format_printf_message(words.data() + 1, words.size() - 1);
  FILE* stream = words[0] == 1 ? stderr : stdout;
  if (stream == stderr) last_stderr_ = text;
  std::fwrite(text.data(), 1, text.size(), stream);
  std::fflush(stream);
}

namespace {

// Reads a NUL-terminated string packed into words from `w`; advances `w` past its last word.
std::string take_string(const uint64_t*& w, const uint64_t* end) {
  std::string s;
  while (w < end) {
    char bytes[8];
    std::memcpy(bytes, w++, 8);
    const size_t n = strnlen(bytes, 8);
    s.append(bytes, n);
    if (n < 8) break;
  }
  return s;
}

}  // namespace

std::string format_printf_message(const uint64_t* words, size_t count) {
  const uint64_t* w = words;
  const uint64_t* end = words + count;
  const std::string fmt = take_string(w, end);
  auto next = [&]() -> uint64_t { return w < end ? *w++ : 0; };
  std::string out;
  char buf[512];
  for (size_t i = 0; i < fmt.size();) {
    if (fmt[i] != '%') {
      out += fmt[i++];
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      out += '%';
      i += 2;
      continue;
    }
    // %[flags][width][.precision][length]conversion; '*' widths and precisions take an argument word each.
    std::string spec = "%";
    size_t j = i + 1;
    while (j < fmt.size() && std::strchr("-+ #0'", fmt[j])) spec += fmt[j++];
    auto number = [&] {
      if (j < fmt.size() && fmt[j] == '*') {
        spec += std::to_string(int32_t(next()));
        ++j;
      }
      while (j < fmt.size() && fmt[j] >= '0' && fmt[j] <= '9') spec += fmt[j++];
    };
    number();
    if (j < fmt.size() && fmt[j] == '.') {
      spec += fmt[j++];
      number();
    }
    std::string length;
    while (j < fmt.size() && std::strchr("hljztL", fmt[j])) length += fmt[j++];
    if (j >= fmt.size()) {  // a dangling '%...': print it as written
      out += fmt.substr(i);
      break;
    }
    const char conv = fmt[j++];
    i = j;
    buf[0] = 0;
    switch (conv) {
      case 'd': case 'i': {
        const uint64_t x = next();
        const long long v = length == "hh" ? (long long)int8_t(x) : length == "h" ? (long long)int16_t(x)
                          : length.empty() ? (long long)int32_t(x) : (long long)x;
        std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), v);
        break;
      }
      case 'u': case 'o': case 'x': case 'X': {
        const uint64_t x = next();
        const unsigned long long v = length == "hh" ? uint8_t(x) : length == "h" ? uint16_t(x)
                                   : length.empty() ? uint32_t(x) : x;
        std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), v);
        break;
      }
      case 'c': std::snprintf(buf, sizeof buf, (spec + conv).c_str(), int(next())); break;
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A': {
        double d;
        const uint64_t x = next();
        std::memcpy(&d, &x, 8);
        std::snprintf(buf, sizeof buf, (spec + conv).c_str(), d);
        break;
      }
      case 's': {
        const std::string s = take_string(w, end);
        std::snprintf(buf, sizeof buf, (spec + 's').c_str(), s.c_str());
        if (s.size() >= sizeof buf && spec == "%") { out += s; continue; }
        break;
      }
      case 'p': std::snprintf(buf, sizeof buf, (spec + 'p').c_str(), reinterpret_cast<void*>(next())); break;
      case 'n': next(); break;  // nothing to store through on the host
      default: out += spec + length + conv; continue;  // not a conversion: print it as written
    }
    out += buf;
  }
  return out;
}

}  // namespace vgpu
