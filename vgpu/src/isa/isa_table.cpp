// The instruction table: every class file's registrations (exec_*.cpp), gathered once.
#include "isa/isa.h"

namespace vgpu {

void IsaTable::add(std::string_view name, ExecFn fn, ImmType imm, uint8_t flags) {
  // Each mnemonic has one home: a second registration is a bug in the instruction tables, caught at start-up.
  if (!ops_.emplace(name, OpInfo{name, fn, imm, flags}).second)
    throw Error("vgpu: instruction " + std::string(name) + " is registered twice");
}

const OpInfo* IsaTable::find(std::string_view m) const {
  auto it = ops_.find(m);
  return it == ops_.end() ? nullptr : &it->second;
}

const IsaTable& isa_table() {
  static const IsaTable table = [] {
    IsaTable t;
    register_salu(t);
    register_sopp(t);
    register_smem(t);
    register_valu(t);
    register_vcmp(t);
    register_vmem(t);
    register_ds(t);
    register_mfma(t);
    register_mfma_f64(t);
    register_mubuf(t);
    register_cvt(t);
    register_vop3p(t);
    register_xlane(t);
    return t;
  }();
  return table;
}

}  // namespace vgpu
