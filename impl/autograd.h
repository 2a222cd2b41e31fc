// impl/autograd.h: the clean-room autograd graph and backward engine (SEMANTICS §2, §3).
//
// Every differentiable op (ops.h) that runs while grad mode is on and has an input that requires grad
// records a Node (SEM-2.2): a backward function mapping the output's grad to one grad per input, the input
// edges (the producing Node, or the leaf to accumulate into), and the tensors it saved for its backward.
// backward() walks the graph from an output, sums every contribution to a node or a leaf before using it
// (SEM-2.6), and accumulates into each leaf's .grad once per call following SEM-3.1-3.3.
//
// Example:
//   Tensor x = Tensor::from_values(DType::Float64, {3}, {1, 2, 3});
//   x.set_requires_grad(true);
//   Tensor y = ops::sum(ops::mul(x, x));
//   backward(y);                              // x.grad() == [2, 4, 6]   (SEM-3.4)
//   { NoGradGuard no_grad; Tensor z = ops::mul(x, x); }   // z records nothing (SEM-2.3)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "impl/error.h"
#include "impl/tensor.h"

namespace lockstep::impl {

// ---------------------------------------------------------------------------------------------------------
// Grad mode (SEM-2.2, SEM-2.3): on by default, per thread.

bool grad_mode_enabled();
void set_grad_mode(bool enabled);

// Turns grad mode off for its lifetime (torch::NoGradGuard); restores the previous mode.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_mode_enabled()) { set_grad_mode(false); }
  ~NoGradGuard() { set_grad_mode(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Sets grad mode to `enabled` for its lifetime; restores the previous mode.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : previous_(grad_mode_enabled()) { set_grad_mode(enabled); }
  ~GradModeGuard() { set_grad_mode(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

// ---------------------------------------------------------------------------------------------------------
// The graph.

// Where the grad of one input of a Node goes: the Node that produced the input, or the leaf whose .grad
// receives it, or nowhere (the input requires no grad).
struct Edge {
  std::shared_ptr<Node> node;
  std::shared_ptr<TensorImpl> leaf;

  bool needed() const { return node != nullptr || leaf != nullptr; }
};

struct Node : std::enable_shared_from_this<Node> {
  // grad_out is shaped like the node's output; returns one grad per input edge, shaped like that input
  // (an undefined Tensor = no contribution). Runs with grad mode = create_graph, so grads built with ops.h
  // are themselves recorded when a graph of the backward is asked for.
  using BackwardFn = std::function<std::vector<Tensor>(const Node& self, const Tensor& grad_out)>;

  std::string name;            // "MulBackward", ... (for messages and tests)
  uint64_t sequence_nr = 0;    // creation order: later nodes run first among the ready ones
  std::vector<Edge> inputs;    // one per input of the op
  std::vector<Tensor> saved;   // tensors the backward needs (SEM-2.5: only the ops that save); an undefined
                               // entry = a slot the backward does not need (its input's grad is not needed)
  std::vector<uint64_t> saved_versions;  // saved[i].version() when saved (set by record())
  bool saves_tensors = false;  // whether this op saves tensors at all (the saved list may be empty)
  bool saved_freed = false;    // set by a backward without retain_graph (SEM-2.5)
  BackwardFn backward;

  bool needs_grad(size_t input) const { return input < inputs.size() && inputs[input].needed(); }
};

// Whether an op on `inputs` records a node now (SEM-2.2): grad mode is on and some input requires grad.
bool should_record(const std::vector<Tensor>& inputs);

// Whether input `i` of an op on `inputs` will need its grad (it requires grad and grad mode is on): an op
// saves an operand only when the grad of some input that requires grad needs it (black-box, LibTorch 1.13:
// mul(p, c) saves c only, so a step changing p does not fail a retained graph; linear with only the bias
// requiring grad saves nothing and can be backpropagated twice).
bool input_needs_grad(const Tensor& input);

// Makes `output` the result of a recorded op when should_record(inputs): gives it a Node named `name`
// with edges to `inputs`, the `saved` tensors (saves_tensors = `saves`; their versions are recorded now,
// see TensorImpl::version), and `backward`; output then
// requires grad and has that grad_fn. Otherwise output is left as it is (no grad, no grad_fn).
// Returns output.
Tensor record(Tensor output, const char* name, const std::vector<Tensor>& inputs, std::vector<Tensor> saved,
              bool saves, Node::BackwardFn backward);

// Like record(), for an op whose backward is written in terms of its output (exp, tanh, sigmoid, relu,
// log_softmax): the node saves a copy of the output's values as saved[0] (saves_tensors = true). Its values
// are those of the forward even when an input is later changed in place by a step (black-box: LibTorch's
// tanh backward after retain_graph + step uses the forward's output), and the copy keeps the node from
// owning the tensor that owns the node. Read it with saved_output().
Tensor record_saving_output(Tensor output, const char* name, const std::vector<Tensor>& inputs,
                            Node::BackwardFn backward);

// saved[0] of a node made by record_saving_output, for a backward formula: as saved when grad mode is off;
// under create_graph, a copy that requires grad and has `self` as grad_fn, so that the backward's own graph
// reaches the node's inputs through it.
Tensor saved_output(const Node& self);

// ---------------------------------------------------------------------------------------------------------
// Backward (SEM-2.3 - 2.6, SEM-3.1 - 3.3).
//
// `gradient` null: implicit ones, only for a one-element output (SEM-2.4); else shaped and typed like the
// output. `retain_graph` false frees every saved tensor of the nodes run; running a node again whose saved
// tensors were freed throws backward_through_freed_graph (SEM-2.5). `create_graph` records the backward
// itself, and accumulation into a defined grad is then out of place (SEM-3.3).
// A node whose saved tensor was changed in place since it was saved (its version moved: an Adam/AdamW step
// of a saved parameter) throws inplace_modified when it runs, like LibTorch's "one of the variables needed
// for gradient computation has been modified by an inplace operation"; the freed check comes first.
// An output that is a leaf requiring grad receives `gradient` (copied) into its own .grad.
// Order (observable when a node fails half-way, SEM-2.5): among the nodes whose contributions are all in,
// the most recently created runs first; a leaf is accumulated into as soon as its last contribution arrives.
// Throws Error (kinds above).
void backward(const Tensor& output, const Tensor* gradient = nullptr, bool retain_graph = false,
              bool create_graph = false);

}  // namespace lockstep::impl
