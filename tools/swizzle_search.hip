// Finds the shared-tile swizzle of each arch and element size: st<T, R, C> stores chunk q of row r at slot
// q ^ (swizzle(r) & slot_mask), swizzle(r) = XOR of masks[b] over the set bits b of r. A depth-first search over the
// masks of row bits 0..6 keeps those under which every register-tile read hk issues from a shared tile (both MFMA
// families, row and col layouts, rows of 64 to 512 bytes, every base-tile position) costs no extra LDS cycle under
// vgpu's bank model (the same code the profiler runs); among them it prefers the fewest conflicts of the writes
// (register -> shared stores, global -> shared 16-byte chunks). The lane -> (row, col) maps mirror include/hk
// (rt::row_of/col_of and load(rt, st) in ops/memory.h); tests/hk/banks_test.hip checks the result on the real code.
//
//   swizzle-search            prints the masks for include/hk/arch/cdna3.h and cdna4.h
//   swizzle-search --verify   exits 1 unless the masks those headers hold are conflict free for every read
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "hk/arch/target.h"
#include "memory/lds_banks.h"
#include "vgpu/arch.h"

namespace {

using vgpu::Arch;

constexpr int row_bits = 7;  // fp8 col tiles on gfx950 span 128 rows
using Masks = std::array<int, row_bits>;

// What the search needs of a target, read from hk's description of it (include/hk/arch/).
struct ArchFacts {
  Arch arch;
  const char* name;
  int granule;  // swizzle granule: the widest LDS read (8 bytes on gfx942, 16 on gfx950)
  bool transposing_reads;
  int e16, e32;  // elements per lane of 16-bit operands (mfma16, mfma32)
  int f8_16, f8_32;  // fp8 operands
  Masks chosen[2];  // the masks hk uses for 1- and 2-byte elements
  explicit ArchFacts(const hk::arch::target& t) : arch(*vgpu::parse_arch(t.name)), name(t.name) {
    hk::arch::visit(t, [&](auto a) {
      using A = decltype(a);
      granule = A::lds_read_bytes, transposing_reads = A::lds_read_transpose;
      e16 = A::mfma_elems(), e32 = A::mfma32_elems(), f8_16 = A::fp8_elems(), f8_32 = A::fp8_elems32();
      std::copy_n(A::swizzle_8bit, row_bits, chosen[0].begin());
      std::copy_n(A::swizzle_16bit, row_bits, chosen[1].begin());
    });
  }
};

// One LDS instruction of one wave: each lane's (row, col) in the tile, bytes per lane.
struct Access {
  int size, cols;  // element bytes and the tile's columns
  int row[64], col[64];
  int bytes;
  bool write;
  const vgpu::BankModel* model;
  int max_row;
};

struct Problem {
  const ArchFacts& a;
  std::vector<Access> reads, writes;

  uint64_t cost(const Access& x, const Masks& m) const {
    const int slots = x.cols * x.size / a.granule, slot_mask = (slots & -slots) - 1;
    uint32_t dwords[64];
    for (int l = 0; l < 64; ++l) {
      int s = 0;
      for (int b = 0; b < row_bits; ++b)
        if (x.row[l] >> b & 1) s ^= m[b];
      const int byte = x.col[l] * x.size;
      const long addr = long(x.row[l]) * x.cols * x.size + long((byte / a.granule) ^ (s & slot_mask)) * a.granule + byte % a.granule;
      dwords[l] = uint32_t(addr / 4);
    }
    return vgpu::conflict_cycles(*x.model, dwords, (x.bytes + 3) / 4, ~0ull);
  }

  void add(Access x, bool write) {
    x.write = write;
    x.model = &vgpu::bank_model(a.arch, x.bytes < 4 ? 4 : x.bytes, write);
    x.max_row = *std::max_element(x.row, x.row + 64);
    (write ? writes : reads).push_back(x);
  }

  // The reads (and stores) of register tiles of family D (16 or 32) with E elements per lane in runs of `run`.
  void add_tile(int size, int rows, int cols, int D, int E, int run, bool row_layout) {
    const int G = 64 / D, brow = row_layout ? D : G * E, bcol = row_layout ? G * E : D;
    if (rows % brow || cols % bcol) return;
    const int piece = std::min(run, a.granule / size);
    const int tr = !a.transposing_reads ? 0 : size == 2 ? 4 : size == 1 ? 8 : 0;
    auto vary = [&](int l, int e) { return (e / run) * (G * run) + (l / D) * run + e % run; };
    for (int i = 0; i < rows / brow; ++i)
      for (int j = 0; j < cols / bcol; ++j) {
        Access x{size, cols};
        if (row_layout) {
          for (int p = 0; p < E; p += piece) {
            x.bytes = piece * size;
            for (int l = 0; l < 64; ++l) x.row[l] = i * brow + l % D, x.col[l] = j * bcol + vary(l, p);
            add(x, false), add(x, true);
          }
          continue;
        }
        if (tr && E % tr == 0 && run == E) {  // ds_read_b64_tr_b16 / _tr_b8
          const int lanes_per_row = 16 / tr;
          for (int h = 0; h < E / tr; ++h) {
            x.bytes = 8;
            for (int l = 0; l < 64; ++l) {
              const int g = l / D, s16 = (l % D) / 16 * 16, k = (l % 16) / lanes_per_row, q = l % lanes_per_row;
              x.row[l] = i * brow + g * E + h * tr + k, x.col[l] = j * bcol + s16 + q * tr;
            }
            add(x, false);
          }
        }
        for (int e = 0; e < E; ++e) {  // element reads (where no transposing read) and stores
          x.bytes = size;
          for (int l = 0; l < 64; ++l) x.row[l] = i * brow + vary(l, e), x.col[l] = j * bcol + l % D;
          if (!tr) add(x, false);
          add(x, true);
        }
      }
  }

  Problem(const ArchFacts& arch, int size) : a(arch) {
    const int e16 = size == 2 ? a.e16 : a.f8_16, e32 = size == 2 ? a.e32 : a.f8_32;
    for (int row_bytes : {64, 128, 256, 512}) {
      const int cols = row_bytes / size, rows = 128;
      for (bool row_layout : {true, false}) {
        add_tile(size, rows, cols, 16, e16, e16, row_layout);
        add_tile(size, rows, cols, 32, e32, e32, row_layout);
      }
      // Global -> shared: thread q writes 16-byte chunk q (row-major), in granule pieces.
      for (int w = 0; w < rows * row_bytes / 16 / 64; ++w)
        for (int piece = 0; piece < 16 / a.granule; ++piece) {
          Access x{size, cols};
          x.bytes = a.granule;
          for (int l = 0; l < 64; ++l) {
            const int q = w * 64 + l;
            x.row[l] = q / (row_bytes / 16), x.col[l] = (q % (row_bytes / 16)) * (16 / size) + piece * a.granule / size;
          }
          add(x, true);
        }
    }
  }

  uint64_t read_cost(const Masks& m) const {
    uint64_t c = 0;
    for (auto& x : reads) c += cost(x, m);
    return c;
  }
  uint64_t write_cost(const Masks& m) const {
    uint64_t c = 0;
    for (auto& x : writes) c += cost(x, m);
    return c;
  }
};

// Depth-first over the masks of bits 0, 1, ...: at depth k every read whose rows all lie below 2^k is decided.
struct Search {
  const Problem& p;
  std::vector<std::vector<const Access*>> decided;
  Masks m{}, best{};
  uint64_t best_writes = ~0ull;
  long nodes = 0, budget;

  Search(const Problem& problem, long node_budget) : p(problem), decided(row_bits + 1), budget(node_budget) {
    for (auto& x : p.reads) {
      int k = 0;
      while ((1 << k) <= x.max_row) ++k;
      decided[std::min(k, row_bits)].push_back(&x);
    }
  }
  bool run(int k = 0) {
    if (++nodes > budget) return true;
    for (const Access* x : decided[k])
      if (p.cost(*x, m)) return false;
    if (k == row_bits) {
      const uint64_t w = p.write_cost(m);
      if (w < best_writes) best_writes = w, best = m;
      return w == 0;
    }
    for (int v = 0; v < 16; ++v) {
      m[k] = v;
      if (run(k + 1)) return true;
    }
    m[k] = 0;
    return false;
  }
};

std::string show(const Masks& m) {
  std::string s = "{";
  for (int b = 0; b < row_bits; ++b) s += (b ? ", " : "") + std::to_string(m[b]);
  return s + "}";
}

}  // namespace

int main(int argc, char** argv) {
  const bool verify = argc > 1 && std::strcmp(argv[1], "--verify") == 0;
  int failures = 0;
  for (const hk::arch::target& t : hk::arch::targets)
    for (int size : {2, 1}) {
      const ArchFacts a(t);
      const Problem p(a, size);
      if (verify) {
        const Masks& m = a.chosen[size - 1];
        const uint64_t r = p.read_cost(m), w = p.write_cost(m);
        std::printf("%s %d-byte elements %s: %zu reads, %llu conflict cycles; %zu writes, %llu conflict cycles\n", a.name,
                    size, show(m).c_str(), p.reads.size(), (unsigned long long)r, p.writes.size(), (unsigned long long)w);
        failures += r != 0;
        continue;
      }
      Search s(p, 20'000'000);
      s.run();
      if (s.best_writes == ~0ull) {
        std::printf("%s %d-byte elements: no conflict-free swizzle\n", a.name, size);
        ++failures;
      } else {
        std::printf("%s %d-byte elements: masks %s (writes: %llu conflict cycles)\n", a.name, size, show(s.best).c_str(),
                    (unsigned long long)s.best_writes);
      }
    }
  return failures ? 1 : 0;
}
