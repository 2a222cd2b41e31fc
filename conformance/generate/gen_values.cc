// Generators of dtypes, shapes, numbers and tensors (generators.h). Numbers are built from integers so
// that RapidCheck's integer shrinking moves them toward 0, small integers, halves and quarters.
#include <cfloat>
#include <cmath>
#include <limits>

#include "conformance/generate/generators.h"

namespace lockstep {
namespace {

double to_dtype(double x, DType dtype) {
  return dtype == DType::Float32 ? static_cast<double>(static_cast<float>(x)) : x;
}

// The exponent of the smallest normal number of the dtype (2^-126 for float, 2^-1022 for double).
int min_normal_exponent(DType dtype) { return dtype == DType::Float32 ? FLT_MIN_EXP - 1 : DBL_MIN_EXP - 1; }

// An integer in -bound..bound that shrinks toward 0, then 1, -1, 2, -2, ... (inRange alone shrinks toward
// its lower bound).
rc::Gen<int> integer_toward_zero(int bound) {
  return rc::gen::map(rc::gen::inRange<int>(0, 2 * bound + 1), [](int k) { return k % 2 == 1 ? (k + 1) / 2 : -(k / 2); });
}

}  // namespace

rc::Gen<DType> gen_dtype() { return rc::gen::element(DType::Float32, DType::Float64); }

rc::Gen<Shape> gen_shape() {
  // Dims shrink toward 1 (inRange shrinks toward its lower bound); rank shrinks toward 0-d.
  const rc::Gen<int64_t> small_dim = rc::gen::resize(rc::kNominalSize, rc::gen::inRange<int64_t>(1, 5));
  const rc::Gen<int64_t> dim = rc::gen::weightedOneOf<int64_t>(
      {{9, small_dim}, {1, rc::gen::resize(rc::kNominalSize, rc::gen::inRange<int64_t>(1, 9))}});
  return rc::gen::weightedOneOf<Shape>({
      {2, rc::gen::just(Shape{})},
      {4, rc::gen::container<Shape>(1, dim)},
      {4, rc::gen::container<Shape>(2, dim)},
  });
}

rc::Gen<double> gen_value(DType dtype, const GenOptions& options) {
  using rc::gen::inRange;
  using rc::gen::map;
  const int emin = min_normal_exponent(dtype);
  // Small integers -4..4, shrinking toward 0 (then 1, -1, 2, ...).
  rc::Gen<double> small_integer = map(integer_toward_zero(4), [](int k) { return static_cast<double>(k); });
  // Quarters k/4 for k in -16..16: halves and quarters, shrinking toward 0.
  rc::Gen<double> quarter = map(integer_toward_zero(16), [](int k) { return k / 4.0; });
  // mantissa * 2^e with e in -16..-8: magnitudes ~1.5e-5 .. 16 (shrink: mantissa toward 0, e toward -8).
  rc::Gen<double> magnitude =
      map(rc::gen::pair(integer_toward_zero(4096), inRange<int>(0, 9)),
          [](const std::pair<int, int>& me) { return std::ldexp(me.first, -8 - me.second); });
  // Tiny: within a few binades of the smallest normal number (denormal-adjacent).
  rc::Gen<double> tiny = map(rc::gen::pair(integer_toward_zero(255), inRange<int>(0, 9)),
                             [emin](const std::pair<int, int>& me) {
                               return std::ldexp(me.first, emin - 4 + me.second - 4);
                             });
  // Large: a small mantissa times 2^20 .. 2^54 (squares stay finite in float32).
  rc::Gen<double> large = map(rc::gen::pair(integer_toward_zero(64), inRange<int>(20, 55)),
                              [](const std::pair<int, int>& me) { return std::ldexp(me.first, me.second); });
  std::initializer_list<std::pair<std::size_t, rc::Gen<double>>> finite_choices = {
      {29, small_integer}, {29, quarter}, {38, magnitude}, {2, tiny}, {2, large}};
  rc::Gen<double> finite = rc::gen::weightedOneOf<double>(finite_choices);
  rc::Gen<double> any = finite;
  if (options.special_values) {
    rc::Gen<double> special =
        rc::gen::element(std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity());
    any = rc::gen::weightedOneOf<double>({{93, finite}, {7, special}});
  }
  // Size-independent: a small program still gets interesting numbers.
  return rc::gen::resize(rc::kNominalSize, map(any, [dtype](double x) { return to_dtype(x, dtype); }));
}

rc::Gen<TensorValue> gen_tensor(DType dtype, Shape shape, const GenOptions& options) {
  const auto count = static_cast<std::size_t>(numel(shape));
  return rc::gen::map(rc::gen::container<std::vector<double>>(count, gen_value(dtype, options)),
                      [dtype, shape](std::vector<double> data) {
                        TensorValue t;
                        t.dtype = dtype;
                        t.shape = shape;
                        t.data = std::move(data);
                        return t;
                      });
}

}  // namespace lockstep
