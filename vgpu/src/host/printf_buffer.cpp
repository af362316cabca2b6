// Buffered printf records (printf_buffer.h), formatted by the hostcall printf's formatter.
#include "host/printf_buffer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "host/hostcall.h"

namespace vgpu {

PrintfBuffer::PrintfBuffer(MemoryMap& memory, uint32_t bytes) : memory_(memory), storage_((bytes + 7) / 8, 0) {
  const uint32_t header[2] = {0, uint32_t(storage_.size() * 8)};
  std::memcpy(storage_.data(), header, sizeof header);
  memory_.add(storage_.data(), storage_.size() * 8, MemoryKind::dispatch);
}

PrintfBuffer::~PrintfBuffer() { memory_.release(storage_.data()); }

void PrintfBuffer::print(const std::map<uint64_t, std::string>& formats) const {
  const uint8_t* base = reinterpret_cast<const uint8_t*>(storage_.data());
  uint32_t used;
  std::memcpy(&used, base, 4);
  const uint64_t end = std::min<uint64_t>(8 + uint64_t(used), storage_.size() * 8);
  auto stop = [](const char* why) { std::fprintf(stderr, "vgpu: warning: buffered printf: %s; later records dropped\n", why); };
  for (uint64_t at = 8; at + 4 <= end;) {
    uint32_t control;
    std::memcpy(&control, base + at, 4);
    const uint64_t size = control >> 2;
    if (size < 12 || at + size > end) return stop("a record's size runs past the data the kernels wrote");
    // The message as the hostcall printf sends it: the format text packed 8 bytes a word, then the argument words.
    const uint8_t* body = base + at + 4;
    const uint64_t body_bytes = size - 4;
    std::vector<uint64_t> words;
    uint64_t args_at;
    std::string format;
    if (control & 2) {
      uint64_t hash;
      std::memcpy(&hash, body, 8);
      auto it = formats.find(hash);
      if (it == formats.end()) return stop("a record's format hash is not in the code object's amdhsa.printf");
      format = it->second;
      args_at = 8;
    } else {
      const void* nul = std::memchr(body, 0, body_bytes);
      if (!nul) return stop("a record's format string has no terminating NUL");
      format.assign(reinterpret_cast<const char*>(body), static_cast<const uint8_t*>(nul) - body);
      args_at = std::min<uint64_t>((format.size() + 1 + 7) / 8 * 8, body_bytes);
    }
    words.resize((format.size() + 1 + 7) / 8 + (body_bytes - args_at + 7) / 8, 0);
    std::memcpy(words.data(), format.c_str(), format.size() + 1);
    std::memcpy(reinterpret_cast<uint8_t*>(words.data()) + (format.size() + 1 + 7) / 8 * 8, body + args_at,
                body_bytes - args_at);
    const std::string text = format_printf_message(words.data(), words.size());
    FILE* stream = (control & 1) ? stderr : stdout;
    std::fwrite(text.data(), 1, text.size(), stream);
    std::fflush(stream);
    at += size;
  }
}

}  // namespace vgpu
