// Vector compares (VOPC): one result bit per lane into VCC or an SGPR pair; the v_cmpx forms also write EXEC.
#include "isa/isa.h"
#include "isa/mem_ops.h"
#include "isa/ops.h"

namespace vgpu {

bool class_match_f32(float x, uint32_t mask);
bool class_match_f64(double x, uint32_t mask);
bool class_match_f16(f16 x, uint32_t mask);

namespace {

template <auto F, bool writes_exec>
void vcmp(Wave& w, const Inst& I) {
  using Tr = traits_of<F>;
  using A = std::tuple_element_t<0, typename Tr::args>;
  using B = std::tuple_element_t<1, typename Tr::args>;
  if constexpr (sizeof(A) == 4 && sizeof(B) == 4) {
    if (I.flags & mod::plain) {  // sources read in place (ops.h plain_source)
      alignas(64) uint32_t bcast[2][kLanes];
      const uint32_t* a = plain_source(w, I.op[1], bcast[0]);
      const uint32_t* b = plain_source(w, I.op[2], bcast[1]);
      alignas(16) uint8_t on[kLanes];
      for (int l = 0; l < kLanes; ++l) on[l] = F(std::bit_cast<A>(a[l]), std::bit_cast<B>(b[l]));
      const uint64_t m = mask_of(on) & w.exec();
      write_s64(w, I.op[0], m);
      if constexpr (writes_exec) w.set_exec(m);
      return;
    }
  }
  Lanes<A> a;
  Lanes<B> b;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  uint64_t m = 0;
  for (int l = 0; l < kLanes; ++l) m |= uint64_t(F(a[l], b[l])) << l;
  m &= w.exec();
  write_s64(w, I.op[0], m);
  if constexpr (writes_exec) w.set_exec(m);
}

template <auto F>
void add_cmp(IsaTable& t, std::string name, std::string type, ImmType imm) {
  t.add(intern("v_cmp_" + name + "_" + type), vcmp<F, false>, imm);
  t.add(intern("v_cmpx_" + name + "_" + type), vcmp<F, true>, imm);
}

template <class T>
void add_float_cmps(IsaTable& t, const char* type, ImmType imm) {
  add_cmp<[](T, T) { return false; }>(t, "f", type, imm);
  add_cmp<[](T a, T b) { return a < b; }>(t, "lt", type, imm);
  add_cmp<[](T a, T b) { return a == b; }>(t, "eq", type, imm);
  add_cmp<[](T a, T b) { return a <= b; }>(t, "le", type, imm);
  add_cmp<[](T a, T b) { return a > b; }>(t, "gt", type, imm);
  add_cmp<[](T a, T b) { return a < b || a > b; }>(t, "lg", type, imm);
  add_cmp<[](T a, T b) { return a >= b; }>(t, "ge", type, imm);
  add_cmp<[](T a, T b) { return a == a && b == b; }>(t, "o", type, imm);
  add_cmp<[](T a, T b) { return a != a || b != b; }>(t, "u", type, imm);
  add_cmp<[](T a, T b) { return !(a >= b); }>(t, "nge", type, imm);
  add_cmp<[](T a, T b) { return !(a < b || a > b); }>(t, "nlg", type, imm);
  add_cmp<[](T a, T b) { return !(a > b); }>(t, "ngt", type, imm);
  add_cmp<[](T a, T b) { return !(a <= b); }>(t, "nle", type, imm);
  add_cmp<[](T a, T b) { return !(a == b); }>(t, "neq", type, imm);
  add_cmp<[](T a, T b) { return !(a < b); }>(t, "nlt", type, imm);
  add_cmp<[](T, T) { return true; }>(t, "tru", type, imm);
}

template <class T>
void add_int_cmps(IsaTable& t, const char* type, ImmType imm) {
  add_cmp<[](T, T) { return false; }>(t, "f", type, imm);
  add_cmp<[](T a, T b) { return a < b; }>(t, "lt", type, imm);
  add_cmp<[](T a, T b) { return a == b; }>(t, "eq", type, imm);
  add_cmp<[](T a, T b) { return a <= b; }>(t, "le", type, imm);
  add_cmp<[](T a, T b) { return a > b; }>(t, "gt", type, imm);
  add_cmp<[](T a, T b) { return a != b; }>(t, "ne", type, imm);
  add_cmp<[](T a, T b) { return a >= b; }>(t, "ge", type, imm);
  add_cmp<[](T, T) { return true; }>(t, "t", type, imm);
}

}  // namespace

void register_vcmp(IsaTable& t) {
  add_float_cmps<float>(t, "f32", ImmType::f32);
  add_float_cmps<double>(t, "f64", ImmType::f64);
  add_float_cmps<f16>(t, "f16", ImmType::f16);
  add_int_cmps<int32_t>(t, "i32", ImmType::b32);
  add_int_cmps<uint32_t>(t, "u32", ImmType::b32);
  add_int_cmps<int64_t>(t, "i64", ImmType::b64);
  add_int_cmps<uint64_t>(t, "u64", ImmType::b64);
  add_int_cmps<int16_t>(t, "i16", ImmType::b32);
  add_int_cmps<uint16_t>(t, "u16", ImmType::b32);
  add_cmp<[](float a, uint32_t m) { return class_match_f32(a, m); }>(t, "class", "f32", ImmType::f32);
  add_cmp<[](double a, uint32_t m) { return class_match_f64(a, m); }>(t, "class", "f64", ImmType::f64);
  add_cmp<[](f16 a, uint32_t m) { return class_match_f16(a, m); }>(t, "class", "f16", ImmType::f16);
}

}  // namespace vgpu
