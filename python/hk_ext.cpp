// hk._C: the kernels' host APIs for Python. The problem structs are bound field by field (pointers as integers, so
// this file needs no torch headers and compiles in seconds); python/hk fills them from torch tensors and registers the
// torch ops. Each call registers the host memory it is given with the HIP runtime for its duration (vgpu reads
// torch's CPU tensors in place), launches, waits, and raises hk's Status message as a Python exception.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "attention/attention.h"
#include "attention/decode.h"
#include "gemm/gemm.h"
#include "gemm/gemm_blockwise.h"
#include "gemm/gemm_int8.h"
#include "gemm/gemm_mx.h"
#include "norm/norm.h"
#include "rotary/rotary.h"

namespace py = pybind11;

namespace {

using Range = std::pair<uintptr_t, size_t>;  // [start, start + bytes) of host memory a call reads or writes

std::string hip_message(const char* what, hipError_t e) { return std::string("hk: ") + what + ": " + hipGetErrorString(e); }

// The host memory registered with the runtime on behalf of calls in flight, process-wide: each registration counts
// the calls using it and is unregistered when the last one ends. Calls run from many Python threads at once (the GIL
// is released while kernels run), and several may pass the same tensor (or views of one storage, whose ranges are
// the same): the first registers it, the others share it, and none pulls it from under another's kernel. A range
// that overlaps a registration without matching it (storages over one buffer, from_numpy say) waits until that
// registration ends; a call waits holding nothing, so calls never wait on each other in a cycle.
class HostRegistry {
 public:
  static HostRegistry& instance() {
    static HostRegistry registry;
    return registry;
  }

  // Registers (or shares) every range of `merged` (sorted, disjoint); returns those this call holds.
  std::vector<Range> acquire(const std::vector<Range>& merged) {
    std::unique_lock lock(mutex_);
    released_.wait(lock, [&] { return std::none_of(merged.begin(), merged.end(), [&](const Range& r) { return conflicts(r); }); });
    std::vector<Range> held;
    for (const Range& r : merged) {
      if (Entry* e = covering(r)) {
        ++e->calls, held.push_back(e->range);
        continue;
      }
      void* p = reinterpret_cast<void*>(r.first);
      if (hk::api::inside_allocation(p, r.second)) continue;  // device memory, or registered by the program itself
      if (hipError_t e = hipHostRegister(p, r.second, hipHostRegisterDefault); e != hipSuccess) {
        (void)hipGetLastError();
        release_locked(held);
        throw std::runtime_error(hip_message("cannot register a tensor's memory with the HIP runtime", e));
      }
      entries_.emplace(r.first, Entry{r, 1});
      held.push_back(r);
    }
    return held;
  }

  void release(const std::vector<Range>& held) {
    {
      std::lock_guard lock(mutex_);
      release_locked(held);
    }
    released_.notify_all();
  }

 private:
  struct Entry {
    Range range;
    int calls;
  };
  // The registration holding all of `r`, if any.
  Entry* covering(const Range& r) {
    auto it = entries_.upper_bound(r.first);
    if (it == entries_.begin()) return nullptr;
    Entry& e = std::prev(it)->second;
    return r.first + r.second <= e.range.first + e.range.second ? &e : nullptr;
  }
  // True if `r` overlaps a registration that does not hold all of it.
  bool conflicts(const Range& r) {
    if (covering(r)) return false;
    auto it = entries_.upper_bound(r.first);
    if (it != entries_.begin() && std::prev(it)->second.range.first + std::prev(it)->second.range.second > r.first) return true;
    return it != entries_.end() && it->first < r.first + r.second;
  }
  void release_locked(const std::vector<Range>& held) {
    for (const Range& r : held) {
      auto it = entries_.find(r.first);
      if (it == entries_.end() || --it->second.calls > 0) continue;
      (void)hipHostUnregister(reinterpret_cast<void*>(r.first));
      entries_.erase(it);
    }
  }

  std::mutex mutex_;
  std::condition_variable released_;
  std::map<uintptr_t, Entry> entries_;  // by start
};

// The host memory of one call, registered for its duration: the union of its ranges (overlapping ones merged).
class HostRegistration {
 public:
  explicit HostRegistration(std::vector<Range> ranges) {
    std::sort(ranges.begin(), ranges.end());
    std::vector<Range> merged;
    for (const Range& r : ranges) {
      if (r.first == 0 || r.second == 0) continue;
      if (!merged.empty() && r.first < merged.back().first + merged.back().second) {
        merged.back().second = std::max(merged.back().second, r.first + r.second - merged.back().first);
      } else {
        merged.push_back(r);
      }
    }
    held_ = HostRegistry::instance().acquire(merged);
  }
  ~HostRegistration() { HostRegistry::instance().release(held_); }
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

 private:
  std::vector<Range> held_;
};

// Runs `launch` with `ranges` registered. With host ranges (vgpu) the call waits for the stream, since torch may free
// or reuse the memory as soon as it returns; without (ROCm tensors) it stays asynchronous on the caller's stream.
template <class Launch>
void run(const std::vector<Range>& ranges, hipStream_t stream, Launch&& launch) {
  hk::Status status;
  hipError_t sync = hipSuccess;
  {
    py::gil_scoped_release no_gil;
    HostRegistration registration(ranges);
    status = launch();
    if (status && !ranges.empty()) sync = hipStreamSynchronize(stream);
  }
  if (!status) {
    // hk's validation reports bad arguments as hipErrorInvalidValue: a ValueError; anything else is a RuntimeError.
    if (status.code == hipErrorInvalidValue) throw py::value_error(status.message);
    throw std::runtime_error(status.message);
  }
  if (sync != hipSuccess) {
    (void)hipGetLastError();
    throw std::runtime_error(hip_message("kernel failed", sync));
  }
}

// A pointer field as an integer property (torch's data_ptr()).
template <class S, class... Bases, class P>
void pointer(py::class_<S, Bases...>& c, const char* name, P S::*field) {
  c.def_property(
      name, [field](const S& s) { return reinterpret_cast<uintptr_t>(s.*field); },
      [field](S& s, uintptr_t v) { s.*field = reinterpret_cast<P>(v); });
}

template <class Problem>
void bind_call(py::module_& m, const char* name, hk::Status (*entry)(const Problem&)) {
  m.def(
      name, [entry](const Problem& p, const std::vector<Range>& ranges) { run(ranges, p.stream, [&] { return entry(p); }); },
      py::arg("problem"), py::arg("ranges"));
}

void bind_gemm(py::module_& m) {
  py::class_<hk::GemmProblem> c(m, "GemmProblem");
  c.def(py::init<>())
      .def_readwrite("m", &hk::GemmProblem::m)
      .def_readwrite("n", &hk::GemmProblem::n)
      .def_readwrite("k", &hk::GemmProblem::k)
      .def_readwrite("lda", &hk::GemmProblem::lda)
      .def_readwrite("ldb", &hk::GemmProblem::ldb)
      .def_readwrite("ldc", &hk::GemmProblem::ldc)
      .def_readwrite("b_is_nk", &hk::GemmProblem::b_is_nk)
      .def_readwrite("ab_type", &hk::GemmProblem::ab_type)
      .def_readwrite("c_type", &hk::GemmProblem::c_type)
      .def_readwrite("alpha", &hk::GemmProblem::alpha)
      .def_readwrite("beta", &hk::GemmProblem::beta);
  pointer(c, "a", &hk::GemmProblem::a);
  pointer(c, "b", &hk::GemmProblem::b);
  pointer(c, "c", &hk::GemmProblem::c);
  pointer(c, "stream", &hk::GemmProblem::stream);
  bind_call(m, "gemm", &hk::gemm);
}

void bind_gemm_mx(py::module_& m) {
  py::enum_<hk::mx_format>(m, "mx_format")
      .value("e4m3", hk::mx_format::e4m3)
      .value("e5m2", hk::mx_format::e5m2)
      .value("e2m3", hk::mx_format::e2m3)
      .value("e3m2", hk::mx_format::e3m2)
      .value("e2m1", hk::mx_format::e2m1);
  using P = hk::GemmMxProblem;
  py::class_<P> c(m, "GemmMxProblem");
  c.def(py::init<>())
      .def_readwrite("m", &P::m)
      .def_readwrite("n", &P::n)
      .def_readwrite("k", &P::k)
      .def_readwrite("lda", &P::lda)
      .def_readwrite("a_format", &P::a_format)
      .def_readwrite("ldb", &P::ldb)
      .def_readwrite("b_format", &P::b_format)
      .def_readwrite("ld_scale_a", &P::ld_scale_a)
      .def_readwrite("ld_scale_b", &P::ld_scale_b)
      .def_readwrite("ldc", &P::ldc)
      .def_readwrite("c_type", &P::c_type)
      .def_readwrite("alpha", &P::alpha)
      .def_readwrite("beta", &P::beta);
  pointer(c, "a", &P::a);
  pointer(c, "b", &P::b);
  pointer(c, "scale_a", &P::scale_a);
  pointer(c, "scale_b", &P::scale_b);
  pointer(c, "c", &P::c);
  pointer(c, "stream", &P::stream);
  bind_call(m, "gemm_mx", &hk::gemm_mx);
}

void bind_gemm_int8(py::module_& m) {
  using P = hk::GemmInt8Problem;
  py::class_<P> c(m, "GemmInt8Problem");
  py::enum_<P::Output>(c, "Output")
      .value("int32", P::Output::int32)
      .value("bf16", P::Output::bf16)
      .value("fp32", P::Output::fp32);
  c.def(py::init<>())
      .def_readwrite("m", &P::m)
      .def_readwrite("n", &P::n)
      .def_readwrite("k", &P::k)
      .def_readwrite("lda", &P::lda)
      .def_readwrite("ldb", &P::ldb)
      .def_readwrite("ldc", &P::ldc)
      .def_readwrite("c_type", &P::c_type);
  pointer(c, "a", &P::a);
  pointer(c, "b", &P::b);
  pointer(c, "c", &P::c);
  pointer(c, "row_scale", &P::row_scale);
  pointer(c, "col_scale", &P::col_scale);
  pointer(c, "stream", &P::stream);
  bind_call(m, "gemm_int8", &hk::gemm_int8);
}

void bind_grouped_gemm(py::module_& m) {
  using P = hk::GroupedGemmProblem;
  py::class_<P, hk::GemmProblem> c(m, "GroupedGemmProblem");
  c.def(py::init<>())
      .def_readwrite("groups", &P::groups)
      .def_readwrite("offsets_int64", &P::offsets_int64)
      .def_readwrite("b_group_stride", &P::b_group_stride);
  pointer(c, "offsets", &P::offsets);
  bind_call(m, "grouped_gemm", &hk::grouped_gemm);
}

void bind_gemm_blockwise(py::module_& m) {
  using P = hk::GemmBlockwiseProblem;
  py::class_<P> c(m, "GemmBlockwiseProblem");
  c.def(py::init<>())
      .def_readwrite("m", &P::m)
      .def_readwrite("n", &P::n)
      .def_readwrite("k", &P::k)
      .def_readwrite("lda", &P::lda)
      .def_readwrite("ldb", &P::ldb)
      .def_readwrite("ld_scale_a", &P::ld_scale_a)
      .def_readwrite("ld_scale_b", &P::ld_scale_b)
      .def_readwrite("ldc", &P::ldc)
      .def_readwrite("c_type", &P::c_type)
      .def_readwrite("pow2_scales", &P::pow2_scales);
  pointer(c, "a", &P::a);
  pointer(c, "b", &P::b);
  pointer(c, "scale_a", &P::scale_a);
  pointer(c, "scale_b", &P::scale_b);
  pointer(c, "c", &P::c);
  pointer(c, "stream", &P::stream);
  bind_call(m, "gemm_blockwise", &hk::gemm_blockwise);
}

// hk::AttentionInputs, the part the forward and backward problems share (their Python classes derive from it).
void bind_attention_inputs(py::module_& m) {
  using P = hk::AttentionInputs;
  py::class_<P::Strides>(m, "Strides")
      .def(py::init<long, long, long>(), py::arg("batch"), py::arg("row"), py::arg("head"))
      .def_readwrite("batch", &P::Strides::batch)
      .def_readwrite("row", &P::Strides::row)
      .def_readwrite("head", &P::Strides::head);
  py::class_<P> c(m, "AttentionInputs");
  c.def(py::init<>())
      .def_readwrite("batch", &P::batch)
      .def_readwrite("seqlen_q", &P::seqlen_q)
      .def_readwrite("seqlen_k", &P::seqlen_k)
      .def_readwrite("heads_q", &P::heads_q)
      .def_readwrite("heads_kv", &P::heads_kv)
      .def_readwrite("head_dim", &P::head_dim)
      .def_readwrite("head_dim_v", &P::head_dim_v)
      .def_readwrite("q_strides", &P::q_strides)
      .def_readwrite("k_strides", &P::k_strides)
      .def_readwrite("v_strides", &P::v_strides)
      .def_readwrite("type", &P::type)
      .def_readwrite("softmax_scale", &P::softmax_scale)
      .def_readwrite("softcap", &P::softcap)
      .def_readwrite("alibi_batch_stride", &P::alibi_batch_stride)
      .def_readwrite("dropout_p", &P::dropout_p)
      .def_readwrite("dropout_seed", &P::dropout_seed)
      .def_readwrite("dropout_offset", &P::dropout_offset)
      .def_readwrite("causal", &P::causal)
      .def_readwrite("window_left", &P::window_left)
      .def_readwrite("window_right", &P::window_right);
  pointer(c, "q", &P::q);
  pointer(c, "k", &P::k);
  pointer(c, "v", &P::v);
  pointer(c, "cu_seqlens_q", &P::cu_seqlens_q);
  pointer(c, "cu_seqlens_k", &P::cu_seqlens_k);
  pointer(c, "sinks", &P::sinks);
  pointer(c, "alibi_slopes", &P::alibi_slopes);
  pointer(c, "stream", &P::stream);
}

void bind_attention(py::module_& m) {
  using P = hk::AttentionProblem;
  py::class_<P, hk::AttentionInputs> c(m, "AttentionProblem");
  c.def(py::init<>())
      .def_readwrite("o_strides", &P::o_strides)
      .def_readwrite("descale_per_batch", &P::descale_per_batch)
      .def_readwrite("descale_per_head", &P::descale_per_head)
      .def_readwrite("workspace_bytes", &P::workspace_bytes);
  pointer(c, "o", &P::o);
  pointer(c, "lse", &P::lse);
  pointer(c, "q_descale", &P::q_descale);
  pointer(c, "k_descale", &P::k_descale);
  pointer(c, "v_descale", &P::v_descale);
  pointer(c, "workspace", &P::workspace);
  bind_call(m, "attention_forward", &hk::attention_forward);
}

void bind_attention_backward(py::module_& m) {
  using P = hk::AttentionBackwardProblem;
  py::class_<P, hk::AttentionInputs> c(m, "AttentionBackwardProblem");
  c.def(py::init<>())
      .def_readwrite("o_strides", &P::o_strides)
      .def_readwrite("do_strides", &P::do_strides)
      .def_readwrite("dq_strides", &P::dq_strides)
      .def_readwrite("dk_strides", &P::dk_strides)
      .def_readwrite("dv_strides", &P::dv_strides)
      .def_readwrite("workspace_bytes", &P::workspace_bytes);
  pointer(c, "o", &P::o);
  pointer(c, "lse", &P::lse);
  pointer(c, "dout", &P::dout);
  pointer(c, "dq", &P::dq);
  pointer(c, "dk", &P::dk);
  pointer(c, "dv", &P::dv);
  pointer(c, "dsinks", &P::dsinks);
  pointer(c, "workspace", &P::workspace);
  bind_call(m, "attention_backward", &hk::attention_backward);
}

void bind_attention_decode(py::module_& m) {
  using P = hk::AttentionDecodeProblem;
  py::class_<P> c(m, "AttentionDecodeProblem");
  c.def(py::init<>())
      .def_readwrite("batch", &P::batch)
      .def_readwrite("seqlen_q", &P::seqlen_q)
      .def_readwrite("heads_q", &P::heads_q)
      .def_readwrite("heads_kv", &P::heads_kv)
      .def_readwrite("head_dim", &P::head_dim)
      .def_readwrite("q_strides", &P::q_strides)
      .def_readwrite("k_strides", &P::k_strides)
      .def_readwrite("v_strides", &P::v_strides)
      .def_readwrite("o_strides", &P::o_strides)
      .def_readwrite("cache_rows", &P::cache_rows)
      .def_readwrite("num_blocks", &P::num_blocks)
      .def_readwrite("max_blocks", &P::max_blocks)
      .def_readwrite("type", &P::type)
      .def_readwrite("kv_type", &P::kv_type)
      .def_readwrite("softmax_scale", &P::softmax_scale)
      .def_readwrite("causal", &P::causal)
      .def_readwrite("window_left", &P::window_left)
      .def_readwrite("window_right", &P::window_right)
      .def_readwrite("k_descale_per_head", &P::k_descale_per_head)
      .def_readwrite("v_descale_per_head", &P::v_descale_per_head)
      .def_readwrite("k_descale_per_batch", &P::k_descale_per_batch)
      .def_readwrite("v_descale_per_batch", &P::v_descale_per_batch)
      .def_readwrite("k_new_strides", &P::k_new_strides)
      .def_readwrite("v_new_strides", &P::v_new_strides)
      .def_readwrite("seqlen_new", &P::seqlen_new)
      .def_readwrite("rotary_type", &P::rotary_type)
      .def_readwrite("rotary_dim", &P::rotary_dim)
      .def_readwrite("rotary_rows", &P::rotary_rows)
      .def_readwrite("rotary_stride", &P::rotary_stride)
      .def_readwrite("rotary_interleaved", &P::rotary_interleaved);
  pointer(c, "q", &P::q);
  pointer(c, "k_descale", &P::k_descale);
  pointer(c, "k_new", &P::k_new);
  pointer(c, "v_new", &P::v_new);
  pointer(c, "rotary_cos", &P::rotary_cos);
  pointer(c, "rotary_sin", &P::rotary_sin);
  pointer(c, "v_descale", &P::v_descale);
  pointer(c, "k_cache", &P::k_cache);
  pointer(c, "v_cache", &P::v_cache);
  pointer(c, "block_table", &P::block_table);
  pointer(c, "cache_seqlens", &P::cache_seqlens);
  pointer(c, "o", &P::o);
  pointer(c, "lse", &P::lse);
  pointer(c, "stream", &P::stream);
  bind_call(m, "attention_decode", &hk::attention_decode);
}

void bind_rotary(py::module_& m) {
  using T = hk::RotaryTensor;
  py::class_<T> t(m, "RotaryTensor");
  t.def(py::init<>())
      .def_readwrite("heads", &T::heads)
      .def_readwrite("in_stride_b", &T::in_stride_b)
      .def_readwrite("in_stride_s", &T::in_stride_s)
      .def_readwrite("in_stride_h", &T::in_stride_h)
      .def_readwrite("out_stride_b", &T::out_stride_b)
      .def_readwrite("out_stride_s", &T::out_stride_s)
      .def_readwrite("out_stride_h", &T::out_stride_h);
  pointer(t, "input", &T::in);
  pointer(t, "output", &T::out);
  using P = hk::RotaryProblem;
  py::class_<P> c(m, "RotaryProblem");
  c.def(py::init<>())
      .def_readwrite("batch", &P::batch)
      .def_readwrite("seqlen", &P::seqlen)
      .def_readwrite("head_dim", &P::head_dim)
      .def_readwrite("rotary_dim", &P::rotary_dim)
      .def_readwrite("type", &P::type)
      .def_readwrite("q", &P::q)
      .def_readwrite("interleaved", &P::interleaved)
      .def_readwrite("table_type", &P::table_type)
      .def_readwrite("table_rows", &P::table_rows)
      .def_readwrite("table_stride", &P::table_stride)
      .def_readwrite("base", &P::base)
      .def_readwrite("position_offset", &P::position_offset);
  pointer(c, "cos", &P::cos);
  pointer(c, "sin", &P::sin);
  pointer(c, "positions", &P::positions);
  pointer(c, "stream", &P::stream);
  bind_call(m, "rotary", &hk::rotary);
  bind_call(m, "rotary_backward", &hk::rotary_backward);
}

void bind_norm(py::module_& m) {
  using P = hk::NormProblem;
  py::class_<P> c(m, "NormProblem");
  c.def(py::init<>())
      .def_readwrite("rows", &P::rows)
      .def_readwrite("cols", &P::cols)
      .def_readwrite("type", &P::type)
      .def_readwrite("weight_type", &P::weight_type)
      .def_readwrite("ldx", &P::ldx)
      .def_readwrite("ld_residual", &P::ld_residual)
      .def_readwrite("ldy", &P::ldy)
      .def_readwrite("ld_residual_out", &P::ld_residual_out)
      .def_readwrite("ld_mask", &P::ld_mask)
      .def_readwrite("ld_mask_bits", &P::ld_mask_bits)
      .def_readwrite("eps", &P::eps)
      .def_readwrite("p", &P::p)
      .def_readwrite("seed", &P::seed)
      .def_readwrite("offset", &P::offset);
  pointer(c, "x", &P::x);
  pointer(c, "residual", &P::residual);
  pointer(c, "weight", &P::weight);
  pointer(c, "bias", &P::bias);
  pointer(c, "y", &P::y);
  pointer(c, "residual_out", &P::residual_out);
  pointer(c, "mean", &P::mean);
  pointer(c, "rstd", &P::rstd);
  pointer(c, "mask", &P::mask);
  pointer(c, "mask_bits", &P::mask_bits);
  pointer(c, "stream", &P::stream);
  bind_call(m, "layer_norm", &hk::layer_norm);
  bind_call(m, "rms_norm", &hk::rms_norm);

  using B = hk::NormBackwardProblem;
  py::class_<B> b(m, "NormBackwardProblem");
  b.def(py::init<>())
      .def_readwrite("rows", &B::rows)
      .def_readwrite("cols", &B::cols)
      .def_readwrite("type", &B::type)
      .def_readwrite("weight_type", &B::weight_type)
      .def_readwrite("ldy", &B::ldy)
      .def_readwrite("ldr", &B::ldr)
      .def_readwrite("ld_dresidual_in", &B::ld_dresidual_in)
      .def_readwrite("ldx", &B::ldx)
      .def_readwrite("ld_dresidual", &B::ld_dresidual)
      .def_readwrite("workspace_bytes", &B::workspace_bytes)
      .def_readwrite("p", &B::p)
      .def_readwrite("seed", &B::seed)
      .def_readwrite("offset", &B::offset);
  pointer(b, "dy", &B::dy);
  pointer(b, "r", &B::r);
  pointer(b, "dresidual_in", &B::dresidual_in);
  pointer(b, "mean", &B::mean);
  pointer(b, "rstd", &B::rstd);
  pointer(b, "weight", &B::weight);
  pointer(b, "dx", &B::dx);
  pointer(b, "dresidual", &B::dresidual);
  pointer(b, "dweight", &B::dweight);
  pointer(b, "dbias", &B::dbias);
  pointer(b, "workspace", &B::workspace);
  pointer(b, "stream", &B::stream);
  bind_call(m, "layer_norm_backward", &hk::layer_norm_backward);
  bind_call(m, "rms_norm_backward", &hk::rms_norm_backward);
  m.def("norm_backward_workspace_bytes", &hk::norm_backward_workspace_bytes, py::arg("rows"), py::arg("cols"));
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "hk's kernels (host APIs) for the hk Python package";
  py::enum_<hk::scalar_type>(m, "scalar_type")
      .value("bf16", hk::scalar_type::bf16)
      .value("f16", hk::scalar_type::f16)
      .value("fp32", hk::scalar_type::fp32)
      .value("fp8_e4m3", hk::scalar_type::fp8_e4m3)
      .value("fp8_e5m2", hk::scalar_type::fp8_e5m2);
  m.def("device_arch", [] {
    hipDeviceProp_t props;
    int device = 0;
    if (hipError_t e = hipGetDevice(&device); e != hipSuccess) throw std::runtime_error(hip_message("no device", e));
    if (hipError_t e = hipGetDeviceProperties(&props, device); e != hipSuccess)
      throw std::runtime_error(hip_message("cannot read the device's properties", e));
    std::string name = props.gcnArchName;
    return name.substr(0, name.find(':'));  // "gfx942", without the target features
  }, "The current device's architecture, e.g. gfx942 or gfx950");
  bind_gemm(m);
  bind_gemm_mx(m);
  bind_gemm_int8(m);
  bind_grouped_gemm(m);
  bind_gemm_blockwise(m);
  bind_attention_inputs(m);  // the base of the next two
  bind_attention(m);
  bind_attention_backward(m);
  bind_attention_decode(m);
  bind_rotary(m);
  bind_norm(m);
}
