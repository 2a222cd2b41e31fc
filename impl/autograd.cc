#include "impl/autograd.h"

#include <atomic>
#include <queue>
#include <unordered_map>
#include <utility>

#include "impl/ops.h"

namespace lockstep::impl {

// ---------------------------------------------------------------------------------------------------------
// Grad mode.

namespace {
thread_local bool grad_mode = true;
std::atomic<uint64_t> next_sequence_nr{0};
}  // namespace

bool grad_mode_enabled() { return grad_mode; }
void set_grad_mode(bool enabled) { grad_mode = enabled; }

// ---------------------------------------------------------------------------------------------------------
// Recording (SEM-2.2).

bool should_record(const std::vector<Tensor>& inputs) {
  if (!grad_mode) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

bool input_needs_grad(const Tensor& input) {
  return grad_mode && input.defined() && input.requires_grad();
}

Tensor record(Tensor output, const char* name, const std::vector<Tensor>& inputs, std::vector<Tensor> saved,
              bool saves, Node::BackwardFn backward) {
  if (!should_record(inputs)) return output;
  auto node = std::make_shared<Node>();
  node->name = name;
  node->sequence_nr = next_sequence_nr++;
  node->inputs.reserve(inputs.size());
  for (const Tensor& in : inputs) {
    Edge edge;
    if (in.defined() && in.requires_grad()) {
      if (in.grad_fn()) edge.node = in.grad_fn();
      else edge.leaf = in.impl_ptr();  // a leaf: its grad is accumulated into (SEM-3)
    }
    node->inputs.push_back(std::move(edge));
  }
  node->saved = std::move(saved);
  node->saved_versions.reserve(node->saved.size());
  for (const Tensor& t : node->saved) node->saved_versions.push_back(t.defined() ? t.version() : 0);
  node->saves_tensors = saves;
  node->backward = std::move(backward);
  output.set_requires_grad(true);
  output.impl()->grad_fn = std::move(node);
  return output;
}

Tensor record_saving_output(Tensor output, const char* name, const std::vector<Tensor>& inputs,
                            Node::BackwardFn backward) {
  if (!should_record(inputs)) return output;
  return record(output, name, inputs, {output.clone()}, true, std::move(backward));
}

Tensor saved_output(const Node& self) {
  if (self.saved.empty()) throw Error(ErrorKind::Other, "internal: " + self.name + " saved no output");
  const Tensor& values = self.saved[0];
  if (!grad_mode_enabled()) return values;
  Tensor output = values.clone();  // stands for the output in the backward's graph
  output.set_requires_grad(true);
  output.impl()->grad_fn = std::const_pointer_cast<Node>(self.shared_from_this());
  return output;
}

// ---------------------------------------------------------------------------------------------------------
// Accumulation into a leaf's .grad (SEM-3.1 - 3.3). `incoming` is the sum of every contribution of this
// backward (SEM-2.6).

namespace {

void accumulate_into_leaf(const std::shared_ptr<TensorImpl>& leaf, Tensor incoming, bool create_graph) {
  Tensor param(leaf);
  if (incoming.shape() != param.shape() || incoming.dtype() != param.dtype()) {
    throw Error(ErrorKind::Other, "internal: gradient of shape " + shape_string(incoming.shape()) +
                                            " for a leaf of shape " + shape_string(param.shape()));
  }
  Tensor grad = param.grad();
  if (!grad.defined()) {
    if (create_graph) {
      // SEM-3.3: a copy, recorded (it requires grad and has a grad_fn when the incoming grad does).
      param.set_grad(ops::clone(incoming));
    } else if (incoming.impl_ptr().use_count() == 1 && !incoming.requires_grad()) {
      // SEM-3.1: nobody else holds `incoming`, so it is already a new tensor nobody can alias.
      param.set_grad(incoming);
    } else {
      param.set_grad(incoming.clone());  // SEM-3.1: never alias a tensor the caller holds
    }
  } else if (!create_graph) {
    ops::add_in_place(grad, incoming);  // SEM-3.2: grad += incoming, identity kept
  } else {
    param.set_grad(ops::add(grad, incoming));  // SEM-3.3: out of place, new identity
  }
}

// The sum of two contributions (SEM-2.6); either may be undefined (no contribution).
Tensor sum_contributions(const Tensor& a, Tensor b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return ops::add(a, b);  // out of place: a contribution may be aliased by another edge
}

[[noreturn]] void throw_freed(const Node& node) {
  throw Error(ErrorKind::BackwardThroughFreedGraph,
              "Trying to backward through the graph a second time (or directly access saved tensors after they "
              "have already been freed). Saved intermediate values of the graph are freed when you call "
              ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
              "graph a second time or if you need to access saved tensors after calling backward.");
}

// A saved tensor changed in place since it was saved: LibTorch's message, with its type and versions.
void check_saved_versions(const Node& node) {
  for (size_t i = 0; i < node.saved.size() && i < node.saved_versions.size(); ++i) {
    const Tensor& t = node.saved[i];
    if (!t.defined() || t.version() == node.saved_versions[i]) continue;
    std::string type = t.dtype() == DType::Float32 ? "CPUFloatType" : "CPUDoubleType";
    throw Error(ErrorKind::InplaceModified,
                "one of the variables needed for gradient computation has been modified by an inplace "
                "operation: [" + type + " " + shape_string(t.shape()) + "] is at version " +
                    std::to_string(t.version()) + "; expected version " + std::to_string(node.saved_versions[i]) +
                    " instead. Hint: enable anomaly detection to find the operation that failed to compute its "
                    "gradient, with torch.autograd.set_detect_anomaly(True).");
  }
}

// The root's gradient: the explicit one, checked against the output, or implicit ones (SEM-2.4).
Tensor root_gradient(const Tensor& output, const Tensor* gradient) {
  if (gradient && gradient->defined()) {
    if (gradient->shape() != output.shape()) {
      throw Error(ErrorKind::GradientShape, "Mismatch in shape: grad_output[0] has a shape of " +
                                                      shape_string(gradient->shape()) +
                                                      " and output[0] has a shape of " +
                                                      shape_string(output.shape()) + ".");
    }
    if (gradient->dtype() != output.dtype()) {
      throw Error(ErrorKind::Other, "Mismatch in dtype: the gradient's dtype differs from the output's");
    }
  }
  if (!output.requires_grad() && !output.grad_fn()) {  // SEM-2.3
    throw Error(ErrorKind::NoGradFn, "element 0 of tensors does not require grad and does not have a grad_fn");
  }
  if (gradient && gradient->defined()) return *gradient;
  if (output.numel() != 1) {  // SEM-2.4
    throw Error(ErrorKind::NonscalarBackward, "grad can be implicitly created only for scalar outputs");
  }
  return Tensor::from_values(output.dtype(), output.shape(), {1.0});
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// The backward pass.

void backward(const Tensor& output, const Tensor* gradient, bool retain_graph, bool create_graph) {
  if (!output.defined()) throw Error(ErrorKind::Other, "backward of an undefined tensor");
  Tensor root_grad = root_gradient(output, gradient);
  GradModeGuard mode(create_graph);  // the backward is itself recorded only with create_graph

  if (!output.grad_fn()) {  // the output is a leaf: it receives the gradient itself
    accumulate_into_leaf(output.impl_ptr(), root_grad, create_graph);
    return;
  }

  // 1. Discover the graph: how many edges reach each node and each leaf.
  Node* root = output.grad_fn().get();
  std::unordered_map<Node*, int> node_dependencies;
  std::unordered_map<TensorImpl*, int> leaf_dependencies;
  {
    std::vector<Node*> stack{root};
    node_dependencies[root] = 0;
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      for (const Edge& edge : node->inputs) {
        if (edge.node) {
          auto [it, first_visit] = node_dependencies.try_emplace(edge.node.get(), 0);
          ++it->second;
          if (first_visit) stack.push_back(edge.node.get());
        } else if (edge.leaf) {
          ++leaf_dependencies[edge.leaf.get()];
        }
      }
    }
  }

  // 2. Run the nodes once all their contributions are summed (SEM-2.6): among the ready nodes the most
  //    recently created first; a leaf is accumulated into as soon as its last contribution arrives.
  std::unordered_map<Node*, Tensor> node_grads{{root, root_grad}};
  std::unordered_map<TensorImpl*, Tensor> leaf_grads;
  root_grad = Tensor();
  using Ready = std::pair<uint64_t, Node*>;
  std::priority_queue<Ready> ready;
  ready.push({root->sequence_nr, root});

  while (!ready.empty()) {
    Node* node = ready.top().second;
    ready.pop();
    Tensor grad_out = std::move(node_grads[node]);
    node_grads.erase(node);

    std::vector<Tensor> input_grads;
    if (grad_out.defined()) {
      if (node->saves_tensors && node->saved_freed) throw_freed(*node);  // SEM-2.5
      check_saved_versions(*node);  // black-box: after the freed check
      input_grads = node->backward(*node, grad_out);
      if (input_grads.size() != node->inputs.size()) {
        throw Error(ErrorKind::Other, "internal: " + node->name + " returned " +
                                                std::to_string(input_grads.size()) + " grads for " +
                                                std::to_string(node->inputs.size()) + " inputs");
      }
    }
    // grad_out stays alive while the node's gradients are handed on: a gradient the node passes straight
    // through (add, sub) is then still held here when a leaf receives it, so the leaf copies it instead of
    // taking it over (SEM-3.1). Black-box (LibTorch 1.13): in add(sum(p0), sub(p1, c)) with 0-d leaves, p0 takes
    // over sum's new tensor but p1 copies the pass-through, so two backwards give grads 2 and 2 (not 3 and 3,
    // as when both leaves take over tensors on one storage, add(sum(p0), sum(p1))).
    if (!retain_graph) {  // SEM-2.5: free what the node saved
      node->saved.clear();
      node->saved_freed = true;
    }

    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const Edge& edge = node->inputs[i];
      Tensor g = i < input_grads.size() ? std::move(input_grads[i]) : Tensor();
      if (edge.node) {
        Node* next = edge.node.get();
        Tensor& slot = node_grads[next];
        slot = sum_contributions(slot, std::move(g));
        if (--node_dependencies[next] == 0) ready.push({next->sequence_nr, next});
      } else if (edge.leaf) {
        TensorImpl* leaf = edge.leaf.get();
        Tensor& slot = leaf_grads[leaf];
        slot = sum_contributions(slot, std::move(g));
        if (--leaf_dependencies[leaf] == 0) {
          Tensor total = std::move(slot);
          leaf_grads.erase(leaf);
          if (total.defined()) accumulate_into_leaf(edge.leaf, std::move(total), create_graph);
        }
      }
    }
    grad_out = Tensor();
  }
}

}  // namespace lockstep::impl
