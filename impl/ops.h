// impl/ops.h: the differentiable operations of impl/ (every Op of conformance/program/program.h and the helpers
// their backward formulas need), forward and backward side by side in ops_*.cc.
//
// Every op makes a new tensor (SEM-1.2) of its operands' dtype and computes in that dtype (SEM-1.3);
// scalars are held as double and converted to the dtype where they are used. While grad mode is on and an
// operand requires grad, the result requires grad and has a grad_fn (SEM-2.2); under NoGradGuard nothing
// is recorded (SEM-2.3). Backward formulas are written with these same ops, so a backward run with
// create_graph records its own graph (SEM-3.3).
//
// Which ops save tensors for their backward, and so fail on a second backward without retain_graph
// (SEM-2.5): mul, div, square, pow_scalar, exp, log, tanh, sigmoid, relu, abs, matmul, mse_loss,
// log_softmax (and so cross_entropy), linear (unless only its bias requires grad), embedding. add, sub, neg,
// mul_scalar, sum, mean save nothing. A binary op saves only the operands that the grads of its inputs that
// require grad use (autograd.h, input_needs_grad): e.g. mul(p, c) saves c, not p.
//
// Shapes: binary element-wise ops take operands of one dtype and either one shape or one 0-d operand
// (broadcast; its grad is the sum). Bad operands throw Error (kind "other") with the op's name.
//
// Example:
//   Tensor logits = Tensor::from_values(DType::Float32, {2, 3}, {1, 2, 3, 0, 0, 1});
//   logits.set_requires_grad(true);
//   Tensor loss = ops::cross_entropy(logits, {2, 0});   // 0-d
//   backward(loss);                                    // logits.grad() is (2,3)
#pragma once

#include <cstdint>
#include <vector>

#include "impl/autograd.h"
#include "impl/tensor.h"

namespace lockstep::impl::ops {

// ---------------------------------------------------------------------------------------------------------
// Element-wise (ops_elementwise.cc).

Tensor add(const Tensor& a, const Tensor& b);           // a + b
Tensor sub(const Tensor& a, const Tensor& b);           // a - b
Tensor mul(const Tensor& a, const Tensor& b);           // a * b            (saves a, b)
Tensor div(const Tensor& a, const Tensor& b);           // a / b            (saves a, b)
Tensor neg(const Tensor& a);                            // -a
Tensor mul_scalar(const Tensor& a, double s);           // a * s
Tensor div_scalar(const Tensor& a, double s);           // a / s
Tensor add_scalar(const Tensor& a, double s);           // a + s
Tensor square(const Tensor& a);                         // a * a            (saves a)
Tensor pow_scalar(const Tensor& a, double exponent);    // a ^ exponent     (saves a)
Tensor exp(const Tensor& a);                            //                  (saves its output)
Tensor log(const Tensor& a);                            //                  (saves a)
Tensor tanh(const Tensor& a);                           //                  (saves its output)
Tensor sigmoid(const Tensor& a);                        // 1 / (1 + e^-a)   (saves its output)
Tensor relu(const Tensor& a);                           // max(a, 0); NaN stays NaN (saves its output)
Tensor abs(const Tensor& a);                            //                  (saves a)
Tensor softplus(const Tensor& a);                       // log(1 + e^a); a where a > 20 (saves a)
Tensor sign(const Tensor& a);                           // -1, 0, 1 (0 for NaN); its grad is zero
Tensor relu_grad(const Tensor& grad, const Tensor& a);  // grad where a > 0, else 0 (relu's backward)
Tensor tanh_grad(const Tensor& grad, const Tensor& t);  // grad * (1 - t^2), 1 - t^2 fused (tanh's backward)
Tensor softplus_grad(const Tensor& grad, const Tensor& a);  // grad e^a / (e^a + 1); grad where a > 20
Tensor clone(const Tensor& a);                          // a copy, recorded (grad passes through)

// In place, never recorded: a += b (values only; a keeps its identity and autograd slots, SEM-3.2); bumps
// a's version.
void add_in_place(Tensor& a, const Tensor& b);

// ---------------------------------------------------------------------------------------------------------
// Reductions and shape changes (ops_reduce.cc).

Tensor sum(const Tensor& a);                                  // -> 0-d
Tensor mean(const Tensor& a);                                 // -> 0-d, sum / numel
Tensor expand(const Tensor& scalar, const Shape& shape);      // 0-d -> shape (every element = scalar)
Tensor sum_to(const Tensor& grad, const Shape& shape);        // undoes expand: grad itself or its sum
Tensor sum_dim(const Tensor& a, int dim);                     // (R,C) -> (C) for dim 0, (R) for dim 1
// sum_dim whose sums of -0s are -0 (log_softmax's backward, SEMANTICS §9.5); otherwise the same numbers.
Tensor sum_dim_of_signed_zeros(const Tensor& a, int dim);
Tensor expand_dim(const Tensor& v, int dim, int64_t size);    // (C) -> (size,C) for dim 0; (R) -> (R,size)
Tensor transpose(const Tensor& a);                            // (R,C) -> (C,R)

// ---------------------------------------------------------------------------------------------------------
// Neural-network ops (ops_nn.cc).

Tensor matmul(const Tensor& a, const Tensor& b);              // (n,k) @ (k,m) -> (n,m)        (saves a, b)
Tensor mse_loss(const Tensor& a, const Tensor& b);            // mean((a-b)^2) -> 0-d          (saves a, b)
Tensor log_softmax(const Tensor& x);                          // (N,C), over each row  (saves its output)
Tensor pick_per_row(const Tensor& x, const std::vector<int64_t>& columns);   // (N,C) -> (N): x[i, col[i]]
Tensor place_per_row(const Tensor& v, const std::vector<int64_t>& columns, int64_t num_columns);
                                                              // (N) -> (N,C): zeros, v[i] at (i, col[i])
Tensor nll_loss(const Tensor& log_probs, const std::vector<int64_t>& targets);  // -mean(pick) -> 0-d
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets);  // nll(log_softmax)
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = Tensor());  // x W^T + b  (saves x, W)
// (num,dim) -> (L,dim); saves the indices, and W when `saves_weight` (SEM-2.8: LibTorch 1.13 does, 2.x does not)
Tensor embedding(const Tensor& w, const std::vector<int64_t>& indices, bool saves_weight = true);
Tensor index_rows(const Tensor& w, const std::vector<int64_t>& rows);       // w[rows], recorded, no save
Tensor index_add_rows(const Tensor& g, const std::vector<int64_t>& rows, int64_t num_rows);
                                                              // (L,dim) -> (num_rows,dim) scatter-add

}  // namespace lockstep::impl::ops
