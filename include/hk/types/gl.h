// Global layouts: 4-D tensors in HBM (batch, depth, rows, cols), row-major, each dimension fixed at compile time
// (a positive value) or given at run time (-1). Rows may be padded: the row stride (in elements) defaults to cols.
#pragma once
#include "dtypes.h"

namespace hk {

inline constexpr int runtime_dim = -1;

namespace detail {
template <int N>
struct dim {
  __host__ __device__ constexpr dim(int) {}
  __host__ __device__ constexpr dim() {}
  __host__ __device__ static constexpr int value() { return N; }
};
template <>
struct dim<runtime_dim> {
  int v = 1;
  __host__ __device__ constexpr dim(int x) : v(x) {}
  __host__ __device__ constexpr int value() const { return v; }
};
}  // namespace detail

// A position in tile units: {b, d, r, c} counts tiles of the shape being moved along rows and columns.
struct coord {
  int b = 0, d = 0, r = 0, c = 0;
};

template <tile_element T, int B = runtime_dim, int D = runtime_dim, int R = runtime_dim, int C = runtime_dim>
struct gl {
  using dtype = T;
  T* data;
  [[no_unique_address]] detail::dim<B> b_;
  [[no_unique_address]] detail::dim<D> d_;
  [[no_unique_address]] detail::dim<R> r_;
  [[no_unique_address]] detail::dim<C> c_;
  long stride_;  // elements from one row to the next

  __host__ __device__ gl(T* p, int b, int d, int r, int c, long row_stride = 0)
      : data(p), b_(b), d_(d), r_(r), c_(c), stride_(row_stride ? row_stride : c_.value()) {}
  __host__ __device__ int batch() const { return b_.value(); }
  __host__ __device__ int depth() const { return d_.value(); }
  __host__ __device__ int rows() const { return r_.value(); }
  __host__ __device__ int cols() const { return c_.value(); }
  __host__ __device__ long row_stride() const { return stride_; }
  __host__ __device__ T* at(int b, int d, int r, int c) const {
    return data + ((long(b) * depth() + d) * rows() + r) * stride_ + c;
  }
  __host__ __device__ bool inside(int r, int c) const { return r < rows() && c < cols(); }
};

}  // namespace hk
