#include "vgpu/kernarg.h"

#include <cstring>
#include <string>

namespace vgpu {

void fill_hidden_args(const KernelInfo& k, std::span<uint8_t> buf, Dim3 grid, Dim3 block, uint32_t dynamic_lds) {
  const uint32_t g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  const uint32_t dims = grid.z > 1 || block.z > 1 ? 3 : grid.y > 1 || block.y > 1 ? 2 : 1;
  for (const KernelArg& a : k.args) {
    const std::string& v = a.value_kind;
    if (!v.starts_with("hidden_")) continue;
    uint64_t value = 0;
    auto axis = [&](std::string_view prefix) { return int(v.back() - 'x'); };
    if (v.starts_with("hidden_block_count_")) value = g[axis("")];
    else if (v.starts_with("hidden_group_size_")) value = b[axis("")];
    else if (v.starts_with("hidden_remainder_")) value = 0;  // the grid is a whole number of workgroups
    else if (v == "hidden_grid_dims") value = dims;
    else if (v == "hidden_dynamic_lds_size") value = dynamic_lds;
    else continue;  // offsets, printf/hostcall buffers, queue pointers: zero
    if (a.offset + a.size <= buf.size()) std::memcpy(buf.data() + a.offset, &value, std::min<uint32_t>(a.size, 8));
  }
}

std::vector<uint8_t> build_kernarg(const KernelInfo& k, std::span<const void* const> args, Dim3 grid, Dim3 block,
                                   uint32_t dynamic_lds) {
  std::vector<uint8_t> buf(std::max<size_t>(k.kernarg_segment_size, 8), 0);
  size_t i = 0;
  for (const KernelArg& a : k.args) {
    if (a.value_kind.starts_with("hidden_")) continue;
    if (i >= args.size())
      throw Error("kernel " + k.name + " takes more arguments than the " + std::to_string(args.size()) + " given");
    if (a.offset + a.size > buf.size()) throw Error("kernel " + k.name + ": argument past the kernarg segment");
    std::memcpy(buf.data() + a.offset, args[i++], a.size);
  }
  fill_hidden_args(k, buf, grid, block, dynamic_lds);
  return buf;
}

}  // namespace vgpu
