#include "kernel_report.h"

#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace hk::report {

Resources resources(const vgpu::KernelInfo& k, vgpu::Arch arch, unsigned block_threads) {
  Resources r;
  r.kernel = k.name;
  r.arch = std::string(vgpu::arch_info(arch).name);
  r.vgprs = k.vgpr_count, r.agprs = k.agpr_count, r.sgprs = k.sgpr_count;
  r.vgpr_spills = k.vgpr_spill_count, r.sgpr_spills = k.sgpr_spill_count;
  r.lds_bytes = k.group_segment_fixed_size, r.scratch_bytes = k.private_segment_fixed_size;
  // Each SIMD has 512 unified registers per lane, allocated in granules of 8 (arch VGPRs up to accum_offset, then
  // AGPRs); at most 8 waves per SIMD. Each CU (4 SIMDs) shares its LDS among its workgroups.
  const unsigned unified = std::max(1u, k.kd.accum_offset() + k.agpr_count), granule = (unified + 7) / 8 * 8;
  unsigned by_regs = std::min(8u, 512 / granule);
  const unsigned waves_per_group = (block_threads + 63) / 64;
  unsigned by_lds = 8;
  if (r.lds_bytes) {
    const unsigned groups_per_cu = vgpu::arch_info(arch).lds_bytes / r.lds_bytes;
    by_lds = std::min(8u, groups_per_cu * waves_per_group / 4);
  }
  r.waves_per_simd = std::min(by_regs, by_lds);
  return r;
}

namespace {
std::string mnemonic(const char* text) {
  std::string t(text);
  return t.substr(0, t.find(' '));
}
}  // namespace

Profile profile(const std::vector<vgpuInstructionProfile>& insts) {
  Profile p;
  std::map<unsigned long long, const vgpuInstructionProfile*> by_pc;
  struct Loop { unsigned long long begin, end; };
  std::vector<Loop> loops;
  for (const auto& i : insts) {
    by_pc[i.pc] = &i;
    const std::string m = mnemonic(i.text);
    p.instructions += i.executed;
    p.lds_conflict_cycles += i.lds_conflict_cycles;
    if (m.starts_with("v_mfma")) p.mfma += i.executed;
    else if (m.starts_with("v_")) p.valu += i.executed;
    else if (m.starts_with("ds_")) p.lds += i.executed;
    else if (m.starts_with("global_") || m.starts_with("buffer_") || m.starts_with("flat_") || m.starts_with("scratch_"))
      p.vmem += i.executed;
    else if (m.starts_with("s_")) p.salu += i.executed;
    else p.other += i.executed;
    // A backward branch closes a loop: "s_cbranch_scc1 65523" jumps to pc + 4 + 4 * simm16.
    if (m.starts_with("s_cbranch") || m == "s_branch") {
      const long simm = long(int16_t(std::strtol(i.text + m.size(), nullptr, 10)));
      if (simm < 0) loops.push_back({i.pc + 4 + 4 * simm, i.pc});
    }
  }
  // The hot loop is the one whose body issued the most instructions (for nested loops: the outermost, e.g. the K loop).
  unsigned long long best = 0;
  for (const Loop& l : loops) {
    unsigned long long issued = 0;
    for (auto it = by_pc.lower_bound(l.begin); it != by_pc.end() && it->first <= l.end; ++it) issued += it->second->executed;
    if (issued > best) best = issued, p.loop_begin = l.begin, p.loop_end = l.end;
  }
  if (best) {
    for (auto it = by_pc.lower_bound(p.loop_begin); it != by_pc.end() && it->first <= p.loop_end; ++it) {
      p.loop_instructions++;
      p.loop_mfma += mnemonic(it->second->text).starts_with("v_mfma");
      p.loop_lds_conflict_cycles += it->second->lds_conflict_cycles;
    }
  }
  return p;
}

std::vector<vgpu::KernelInfo> own_kernels(vgpu::Arch arch) {
  // The program and every library it has loaded (hk's kernels live in libhk.so); those without device code are skipped.
  std::vector<std::string> binaries;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* list) {
        const std::string name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
        static_cast<std::vector<std::string>*>(list)->push_back(name);
        return 0;
      },
      &binaries);
  std::vector<vgpu::KernelInfo> out;
  for (const std::string& binary : binaries) {
    std::vector<std::shared_ptr<const vgpu::CodeObject>> objects;
    try {
      objects = vgpu::load_from_host_binary(binary);
    } catch (const vgpu::Error&) {
      continue;  // no .hip_fatbin section: host code only
    }
    for (auto& co : objects)
      if (co->arch == arch)
        for (auto& k : co->kernels) out.push_back(k);
  }
  return out;
}

std::string header() {
  char b[512];
  std::snprintf(b, sizeof b, "%-7s %5s %5s %5s %6s %7s %5s | %10s %6s %6s %6s %6s %6s | %9s %10s %9s", "arch", "VGPR",
                "AGPR", "SGPR", "spills", "LDS", "waves", "insts", "SALU", "VALU", "MFMA", "LDS", "VMEM", "loop MFMA",
                "LDS confl", "loop confl");
  return b;
}

std::string row(const Resources& r, const Profile* p) {
  char b[512];
  int n = std::snprintf(b, sizeof b, "%-7s %5u %5u %5u %6u %7u %5u", r.arch.c_str(), r.vgprs, r.agprs, r.sgprs,
                        r.vgpr_spills + r.sgpr_spills, r.lds_bytes, r.waves_per_simd);
  if (p && p->instructions) {
    auto pct = [&](unsigned long long x) { return 100.0 * double(x) / double(p->instructions); };
    std::snprintf(b + n, sizeof b - n, " | %10llu %5.1f%% %5.1f%% %5.1f%% %5.1f%% %5.1f%% | %3u/%-3u %3.0f%% %10llu %9llu",
                  p->instructions, pct(p->salu), pct(p->valu), pct(p->mfma), pct(p->lds), pct(p->vmem), p->loop_mfma,
                  p->loop_instructions, p->loop_instructions ? 100.0 * p->loop_mfma / p->loop_instructions : 0.0,
                  p->lds_conflict_cycles, p->loop_lds_conflict_cycles);
  }
  return b;
}

}  // namespace hk::report
