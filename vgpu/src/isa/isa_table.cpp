// The instruction table: every class file's registrations (exec_*.cpp), gathered once, each file's under the issue
// class of most of its instructions (the timing model's unit; each file marks its exceptions).
#include "isa/isa.h"

namespace vgpu {

void IsaTable::add(std::string_view name, ExecFn fn, ImmType imm, uint16_t flags, InstShape shape) {
  // Each mnemonic has one home: a second registration is a bug in the instruction tables, caught at start-up.
  if (!ops_.emplace(name, OpInfo{name, fn, imm, flags, issue_, shape}).second)
    throw Error("vgpu: instruction " + std::string(name) + " is registered twice");
}

const OpInfo* IsaTable::find(std::string_view m) const {
  auto it = ops_.find(m);
  return it == ops_.end() ? nullptr : &it->second;
}

OpInfo& IsaTable::at(std::string_view m) {
  auto it = ops_.find(m);
  if (it == ops_.end()) throw Error("vgpu: instruction " + std::string(m) + " is marked but not registered");
  return it->second;
}
void IsaTable::mark(std::initializer_list<std::string_view> names, IssueKind k) {
  for (std::string_view n : names) at(n).issue = k;
}
void IsaTable::mark(std::initializer_list<std::string_view> names, uint16_t flags) {
  for (std::string_view n : names) at(n).flags |= flags;
}

const IsaTable& isa_table() {
  static const IsaTable table = [] {
    IsaTable t;
    t.set_issue(IssueKind::salu), register_salu(t);
    t.set_issue(IssueKind::salu), register_sopp(t);
    t.set_issue(IssueKind::smem), register_smem(t);
    t.set_issue(IssueKind::valu), register_valu(t);
    t.set_issue(IssueKind::valu), register_vcmp(t);
    t.set_issue(IssueKind::vmem), register_vmem(t);
    t.set_issue(IssueKind::lds), register_ds(t);
    t.set_issue(IssueKind::mfma), register_mfma(t);
    t.set_issue(IssueKind::mfma), register_mfma_f64(t);
    t.set_issue(IssueKind::vmem), register_mubuf(t);
    t.set_issue(IssueKind::valu), register_cvt(t);
    t.set_issue(IssueKind::valu), register_vop3p(t);
    t.set_issue(IssueKind::valu), register_xlane(t);
    return t;
  }();
  return table;
}

}  // namespace vgpu
