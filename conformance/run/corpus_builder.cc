#include "conformance/run/corpus_builder.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "conformance/generate/generators.h"
#include "conformance/generate/op_edges.h"
#include "conformance/generate/shrink.h"
#include "conformance/program/features.h"
#include "conformance/program/program_json.h"
#include "conformance/program/pytorch_version.h"
#include "conformance/program/file_system.h"
#include "conformance/run/corpus_reach.h"
#include "conformance/run/default_run.h"
#include "conformance/run/interpreter.h"

namespace lockstep {

bool second_generation_oracle(const std::string& oracle_name) {
  const auto v = parse_pytorch_version(oracle_name);
  return v && v->first >= 2;
}

namespace {

FixtureProvenance provenance(const std::string& oracle_name, const std::string& generator) {
  FixtureProvenance p;
  const std::string& v = oracle_name;  // "libtorch-1.13.0"
  p.oracle = "libtorch";
  p.oracle_version = v.rfind("libtorch-", 0) == 0 ? v.substr(9) : v;
  p.generator = generator;
  return p;
}

// Random programs small enough to read as a fixture.
GenOptions fixture_sized() {
  GenOptions o;
  o.max_size = 30;
  o.max_actions = 12;
  o.max_params = 3;
  o.max_expr_depth = 3;
  return o;
}

Trace run_on_oracle(const EngineFactory& make_oracle, const Program& program) {
  auto oracle = make_oracle();
  return run_program(program, *oracle);
}

std::vector<std::string> merge_tags(const std::vector<std::string>& computed, const std::vector<std::string>& extra) {
  std::vector<std::string> out = computed;
  std::vector<std::string> more;
  for (const std::string& t : extra)
    if (std::find(out.begin(), out.end(), t) == out.end() && std::find(more.begin(), more.end(), t) == more.end())
      more.push_back(t);
  std::sort(more.begin(), more.end());
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

// SEMANTICS sections a program exercises, from its tags (random and gradient-fed fixtures).
std::vector<std::string> semantics_for(const std::vector<std::string>& tags) {
  static const std::vector<std::pair<const char*, std::vector<const char*>>> map = {
      {"accumulation", {"SEM-3.2", "SEM-3.4"}}, {"zero_grad", {"SEM-4.1"}},
      {"set_to_none", {"SEM-4.2"}},              {"grad_none_skip", {"SEM-4.3"}},
      {"sgd", {"SEM-5.3"}},                      {"lr_change", {"SEM-5.4", "SEM-7.5"}},
      {"adam", {"SEM-6.3"}},                     {"adamw", {"SEM-6.4"}},
      {"param_groups", {"SEM-7.1"}},             {"duplicate_param", {"SEM-7.4"}},
      {"add_param_group", {"SEM-7.4"}},          {"retain_graph", {"SEM-2.5"}},
      {"create_graph", {"SEM-3.3"}},             {"no_grad", {"SEM-2.3"}},
      {"weight_tying", {"SEM-2.6"}},             {"explicit_gradient", {"SEM-3.1"}},
      {"nonfinite", {"SEM-9"}},                  {"errors", {"SEM-8"}},
  };
  std::set<std::string> out = {"SEM-8"};
  for (const auto& [tag, secs] : map)
    if (std::find(tags.begin(), tags.end(), tag) != tags.end()) out.insert(secs.begin(), secs.end());
  std::vector<std::string> v(out.begin(), out.end());
  std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
    // numeric order of "SEM-a.b"
    auto key = [](const std::string& s) {
      int a1 = 0, b1 = 0;
      std::sscanf(s.c_str(), "SEM-%d.%d", &a1, &b1);
      return std::make_pair(a1, b1);
    };
    return key(a) < key(b);
  });
  return v;
}

// ---------------------------------------------------------------------------------------------------------
// Gradient-fed programs: forward of a bare parameter, backward with an explicit gradient, so an optimizer port
// without autograd can be checked (the gradients are in the program; the expected trace has every state).

// Deterministic numbers (no <random> distributions, whose output is implementation-defined): multiples of
// 1/16 in [-2, 2], from a 64-bit LCG.
struct Numbers {
  uint64_t state;
  explicit Numbers(uint64_t seed) : state(seed * 2862933555777941757ULL + 3037000493ULL) {}
  double next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    int64_t k = static_cast<int64_t>((state >> 33) % 65) - 32;  // -32..32
    return static_cast<double>(k) / 16.0;
  }
  std::vector<double> values(size_t n) {
    std::vector<double> v(n);
    for (double& x : v) x = next();
    return v;
  }
};

struct GradFedConfig {
  std::string name;
  std::string description;
  std::vector<std::string> semantics;
  OptimizerKind kind;
  OptimizerOptions defaults;
  int steps = 3;
  bool two_groups = false;       // w and b in their own groups, b with half the lr
  bool lr_change = false;        // set_options(lr /= 2) before the third step
  bool skip_b_on_step = false;   // b's grad set to None before the second step (SEM-4.3)
  bool set_to_none = false;      // zero_grad(set_to_none=true) between steps, else zero_grad()
};

OptimizerOptions sgd(double lr, double momentum = 0, double dampening = 0, bool nesterov = false, double wd = 0) {
  OptimizerOptions o;
  o.lr = lr;
  if (momentum != 0) o.momentum = momentum;
  if (dampening != 0) o.dampening = dampening;
  if (nesterov) o.nesterov = true;
  if (wd != 0) o.weight_decay = wd;
  return o;
}

OptimizerOptions adam(double lr, double wd = -1, bool amsgrad = false) {
  OptimizerOptions o;
  o.lr = lr;
  if (wd >= 0) o.weight_decay = wd;
  if (amsgrad) o.amsgrad = true;
  return o;
}

std::vector<GradFedConfig> grad_fed_configs() {
  using K = OptimizerKind;
  std::vector<GradFedConfig> c;
  c.push_back({"sgd", "plain SGD: p -= lr * g", {"SEM-5.3"}, K::SGD, sgd(0.125)});
  c.push_back({"sgd-momentum", "SGD momentum 0.9: the buffer is a copy of the first gradient, then buf*m + g",
               {"SEM-5.3"}, K::SGD, sgd(0.125, 0.9)});
  c.push_back({"sgd-momentum-dampening", "SGD momentum 0.9, dampening 0.5 (no dampening on the first step)",
               {"SEM-5.3"}, K::SGD, sgd(0.125, 0.9, 0.5)});
  c.push_back({"sgd-nesterov", "SGD nesterov with momentum 0.9: d = g + m*buf", {"SEM-5.3"}, K::SGD,
               sgd(0.125, 0.9, 0, true)});
  c.push_back({"sgd-weight-decay", "SGD momentum 0.9 and weight decay 0.25 (L2 added to the gradient)",
               {"SEM-5.3"}, K::SGD, sgd(0.125, 0.9, 0, false, 0.25)});
  c.push_back({"sgd-nesterov-weight-decay", "SGD nesterov, momentum 0.5, weight decay 0.125", {"SEM-5.3"}, K::SGD,
               sgd(0.25, 0.5, 0, true, 0.125)});
  c.push_back({"sgd-lr-change", "SGD momentum 0.9; lr halved before the second step (the buffer is not rescaled)",
               {"SEM-5.3", "SEM-5.4", "SEM-7.5"}, K::SGD, sgd(0.125, 0.9), 3, false, true});
  c.push_back({"sgd-grad-none-skip", "SGD momentum 0.9, weight decay 0.5; b's grad is None at the second step: "
               "b is skipped (no decay, no buffer update)",
               {"SEM-4.3", "SEM-5.3"}, K::SGD, sgd(0.125, 0.9, 0, false, 0.5), 3, false, false, true});
  c.push_back({"sgd-set-to-none", "SGD momentum 0.9 with zero_grad(set_to_none=True) between steps",
               {"SEM-4.2", "SEM-5.3"}, K::SGD, sgd(0.125, 0.9), 3, false, false, false, true});
  c.push_back({"sgd-param-groups", "SGD with two groups; b's group has its own options (lr/2, momentum 0.5)",
               {"SEM-5.3", "SEM-7.1"}, K::SGD, sgd(0.125, 0.9), 3, true});
  c.push_back({"adam", "Adam with its defaults (lr 1e-3, betas 0.9/0.999, eps 1e-8)", {"SEM-6.1", "SEM-6.3"},
               K::Adam, OptimizerOptions{}});
  c.push_back({"adam-lr", "Adam lr 0.1: bias corrections in double, eps after the square root", {"SEM-6.3"},
               K::Adam, adam(0.1)});
  c.push_back({"adam-weight-decay", "Adam lr 0.1, weight decay 0.25 (L2 added to the gradient)", {"SEM-6.3"},
               K::Adam, adam(0.1, 0.25)});
  c.push_back({"adam-amsgrad", "Adam amsgrad: max of the second moments", {"SEM-6.3"}, K::Adam,
               adam(0.1, -1, true)});
  c.push_back({"adam-grad-none-skip", "Adam; b's grad is None at the second step: b's step count stays behind",
               {"SEM-4.3", "SEM-6.2", "SEM-6.3"}, K::Adam, adam(0.1), 3, false, false, true});
  c.push_back({"adam-lr-change", "Adam lr 0.1, halved before the second step", {"SEM-6.3", "SEM-7.5"}, K::Adam,
               adam(0.1), 3, false, true});
  c.push_back({"adamw", "AdamW with its defaults (weight decay 1e-2, decoupled)", {"SEM-6.4"}, K::AdamW,
               OptimizerOptions{}});
  c.push_back({"adamw-weight-decay", "AdamW lr 0.1, weight decay 0.5: p *= 1 - lr*wd first", {"SEM-6.4"},
               K::AdamW, adam(0.1, 0.5)});
  c.push_back({"adamw-amsgrad", "AdamW amsgrad, lr 0.1, weight decay 0.25", {"SEM-6.3", "SEM-6.4"}, K::AdamW,
               adam(0.1, 0.25, true)});
  auto rmsprop = [](double lr, double alpha, double momentum, bool centered, double wd) {
    OptimizerOptions o;
    o.lr = lr;
    if (alpha != 0.99) o.alpha = alpha;
    if (momentum != 0) o.momentum = momentum;
    if (centered) o.centered = true;
    if (wd != 0) o.weight_decay = wd;
    return o;
  };
  auto adagrad = [](double lr, double lr_decay, double wd, double initial) {
    OptimizerOptions o;
    o.lr = lr;
    if (lr_decay != 0) o.lr_decay = lr_decay;
    if (wd != 0) o.weight_decay = wd;
    if (initial != 0) o.initial_accumulator_value = initial;
    return o;
  };
  c.push_back({"rmsprop", "RMSprop lr 0.01 (alpha 0.99, eps 1e-8): p -= lr * g / (sqrt(square_avg) + eps)", {"SEM-14.3"},
               K::RMSprop, rmsprop(0.01, 0.99, 0, false, 0)});
  c.push_back({"rmsprop-momentum-centered", "RMSprop alpha 0.9, momentum 0.9, centered: buf = buf*m + g / avg",
               {"SEM-14.3"}, K::RMSprop, rmsprop(0.01, 0.9, 0.9, true, 0)});
  c.push_back({"rmsprop-weight-decay", "RMSprop lr 0.01, weight decay 0.25 (L2 added to the gradient)", {"SEM-14.3"},
               K::RMSprop, rmsprop(0.01, 0.99, 0, false, 0.25)});
  c.push_back({"rmsprop-grad-none-skip", "RMSprop momentum 0.5; b's grad is None at the second step: b's step count "
               "stays behind", {"SEM-4.3", "SEM-14.2", "SEM-14.3"}, K::RMSprop, rmsprop(0.01, 0.99, 0.5, false, 0),
               3, false, false, true});
  c.push_back({"adagrad", "Adagrad lr 0.1: sum += g^2, p -= lr * g / (sqrt(sum) + eps)", {"SEM-15.2", "SEM-15.3"},
               K::Adagrad, adagrad(0.1, 0, 0, 0)});
  c.push_back({"adagrad-lr-decay-weight-decay", "Adagrad lr 0.1, lr_decay 0.5, weight decay 0.25, initial accumulator "
               "0.1", {"SEM-15.2", "SEM-15.3"}, K::Adagrad, adagrad(0.1, 0.5, 0.25, 0.1)});
  c.push_back({"adagrad-param-groups", "Adagrad with two groups; b's group has its own lr and initial accumulator 0.25 "
               "(its sum still starts from the defaults' 0.5)", {"SEM-15.2", "SEM-7.1"}, K::Adagrad, adagrad(0.1, 0, 0, 0.5), 3, true});
  c.push_back({"adamw-param-groups", "AdamW with two groups; b's group has its own options (1.13: the option "
               "type's defaults, not the optimizer's)", {"SEM-6.4", "SEM-7.1"}, K::AdamW, adam(0.1, 0.5), 3, true});
  return c;
}

Program grad_fed_program(const GradFedConfig& c, DType dtype, uint64_t seed) {
  Numbers numbers(seed);
  Program p;
  p.params.push_back({"w", dtype, {3}, numbers.values(3)});
  p.params.push_back({"b", dtype, {2}, numbers.values(2)});
  OptimizerSpec o;
  o.kind = c.kind;
  o.defaults = c.defaults;
  if (c.two_groups) {
    OptimizerOptions own = c.defaults;
    own.lr = c.defaults.lr.value_or(1e-3) / 2;
    if (c.kind == OptimizerKind::SGD) own.momentum = 0.5;
    // A group's own initial accumulator is not used (SEM-15.2): give it another value, so the fixture shows it.
    if (c.kind == OptimizerKind::Adagrad) own.initial_accumulator_value = 0.25;
    o.groups = {{{"w"}, std::nullopt}, {{"b"}, own}};
  } else {
    o.groups = {{{"w", "b"}, std::nullopt}};
  }
  p.optimizer = o;
  for (int s = 0; s < c.steps; ++s) {
    if (s > 0) {
      Action z;
      z.kind = ActionKind::ZeroGrad;
      z.set_to_none = c.set_to_none;
      p.actions.push_back(z);
    }
    for (const char* name : {"w", "b"}) {
      Action f;
      f.kind = ActionKind::Forward;
      f.loss = param(name);
      p.actions.push_back(f);
      Action b;
      b.kind = ActionKind::Backward;
      b.gradient = numbers.values(name[0] == 'w' ? 3 : 2);
      p.actions.push_back(b);
    }
    if (c.skip_b_on_step && s == 1) {
      Action n;
      n.kind = ActionKind::SetGradNone;
      n.param = "b";
      p.actions.push_back(n);
    }
    if (c.lr_change && s == 1) {
      Action so;
      so.kind = ActionKind::SetOptions;
      so.group = 0;
      so.options.lr = c.defaults.lr.value_or(1e-3) / 2;
      p.actions.push_back(so);
    }
    Action st;
    st.kind = ActionKind::Step;
    p.actions.push_back(st);
  }
  // Round float32 values the way a float32 tensor holds them.
  if (dtype == DType::Float32) {
    for (auto& ps : p.params)
      for (double& v : ps.values) v = static_cast<float>(v);
    for (auto& a : p.actions)
      if (a.gradient)
        for (double& v : *a.gradient) v = static_cast<float>(v);
  }
  validate(p);
  return p;
}

// ---------------------------------------------------------------------------------------------------------

}  // namespace

std::vector<CorpusFixture> build_corpus(const std::vector<NamedCase>& cases, const EngineFactory& make_oracle,
                                        const CorpusOptions& options) {
  std::vector<CorpusFixture> all;
  // A case whose checks depend on the version (SEMANTICS 12.5) is recorded once per generation: by 1.x as itself in
  // corpus/cases with "when" <2.0, by 2.x as ID-torch2 in corpus/cases-torch2 with "when" >=2.0.
  const std::string oracle_name = make_oracle()->name();
  const bool second_generation = second_generation_oracle(oracle_name);
  auto provenance_of = [&](const std::string& generator) { return provenance(oracle_name, generator); };
  auto recorded = [&](const Program& program) { return run_on_oracle(make_oracle, program); };
  for (const NamedCase& c : cases) {
    const bool by_version =
        std::any_of(c.checks.begin(), c.checks.end(), [](const CaseCheck& k) { return !k.when_pytorch.empty(); });
    if (options.version_dependent_only && !by_version) continue;
    Fixture f;
    f.id = c.id + (by_version && second_generation ? "-torch2" : "");
    if (by_version) f.when_pytorch = second_generation ? ">=2.0" : "<2.0";
    f.description = c.description + (c.claim.empty() ? "" : " Claim: " + c.claim);
    f.semantics = c.semantics;
    f.program = c.program;
    f.program_json = program_to_json(c.program);
    f.expected = recorded(c.program);
    f.tags = merge_tags(feature_tags(c.program, &f.expected), c.tags);
    f.provenance = provenance_of("named_case");
    f.provenance.source = "conformance/cases/" + files::file_name(c.file);
    all.push_back({by_version && second_generation ? "cases-torch2" : "cases", std::move(f)});
  }

  // 2.-5. Everything else, unless only the version-dependent named cases are wanted (a second generation's
  // recordings, made on its own oracle: tools/torch2/stage.sh).
  std::map<std::string, int> random_count;  // random fixtures per tag (4.)
  int picked = 0;                           // random fixtures (4.)
  if (!options.version_dependent_only) {
    // 2. Gradient-fed programs.
    uint64_t config_seed = 1;
    for (const GradFedConfig& c : grad_fed_configs()) {
      // float32 for all; float64 too for a few (the arithmetic is the same, only the rounding differs).
      static const std::set<std::string> with_f64 = {"sgd-momentum", "sgd-nesterov-weight-decay", "adam-lr",
                                                     "adam-amsgrad", "adamw-weight-decay", "adam-grad-none-skip"};
      for (DType dtype : {DType::Float32, DType::Float64}) {
        if (dtype == DType::Float64 && !with_f64.count(c.name)) continue;
        Fixture f;
        f.id = fmt::format("grad-{}-{}", c.name, dtype == DType::Float32 ? "f32" : "f64");
        f.description = "Gradient-fed (no autograd needed): " + c.description +
                        ". Each backward feeds its explicit gradient into one parameter's grad.";
        f.program = grad_fed_program(c, dtype, config_seed);
        f.program_json = program_to_json(f.program);
        f.expected = recorded(f.program);
        f.tags = feature_tags(f.program, &f.expected);
        f.semantics = c.semantics;
        f.semantics.insert(f.semantics.begin(), "SEM-3.1");
        f.provenance = provenance_of("gradient_fed");
        all.push_back({"gradient_fed", std::move(f)});
      }
      ++config_seed;
    }

    // 3. Op edge points: every op at each edge class of its inputs (conformance/generate/op_edges.h).
    for (OpEdgeProgram& e : op_edge_programs()) {
      Fixture f;
      f.id = e.id;
      f.description = e.description;
      f.program = std::move(e.program);
      f.program_json = program_to_json(f.program);
      f.expected = recorded(f.program);
      f.tags = merge_tags(feature_tags(f.program, &f.expected), {"op_edge", "edge:" + e.edge});
      f.semantics = {"SEM-2.5", "SEM-2.8", "SEM-2.11"};
      f.provenance = provenance_of("op_edge");
      all.push_back({"ops", std::move(f)});
    }

    // 4. Random programs, until every tag is covered `kTarget` times by random fixtures (or the budget ends).
    constexpr int kTarget = 2;

    std::set<std::string> vocabulary;
    for (const FeatureTagInfo& t : all_feature_tags())
      if (!t.driver_oracle_only) vocabulary.insert(t.tag);
    auto needed = [&](const std::vector<std::string>& tags) {
      for (const std::string& t : tags)
        if (vocabulary.count(t) && random_count[t] < kTarget) return true;
      return false;
    };
    auto all_covered = [&] {
      for (const std::string& t : vocabulary)
        if (random_count[t] < kTarget) return false;
      return true;
    };
    const GenOptions plain = fixture_sized();
    GenOptions special = plain;
    special.special_values = true;
    RandomPrograms plain_stream(options.seed, plain);
    RandomPrograms special_stream(options.seed + 1, special);

    std::set<std::string> ids;
    for (uint64_t k = 0; k < options.max_candidates && picked < options.max_random && !all_covered(); ++k) {
      const bool use_special = k % 8 == 7;
      const uint64_t index = use_special ? k / 8 : k - k / 8;
      Program p = (use_special ? special_stream : plain_stream).at(index).value();
      ProgramSize size = program_size(p);
      if (size.elements > 40 || size.actions > 14) continue;
      std::vector<std::string> guess = feature_tags(p, nullptr);
      guess.push_back("errors");
      guess.push_back("grad_none_skip");
      if (!needed(guess)) continue;
      Trace trace = recorded(p);
      std::vector<std::string> tags = feature_tags(p, &trace);
      if (!needed(tags)) continue;
      Fixture f;
      f.program = p;
      f.program_json = program_to_json(p);
      f.id = content_id("rnd", f.program_json);
      if (!ids.insert(f.id).second) continue;
      f.expected = std::move(trace);
      f.tags = tags;
      f.semantics = semantics_for(tags);
      f.description = fmt::format("Random program {} of seed {}{} ({}).", index, use_special ? options.seed + 1 : options.seed,
                                  use_special ? " with NaN/Inf values" : "", describe(size));
      f.provenance = provenance_of("random");
      f.provenance.seed = use_special ? options.seed + 1 : options.seed;
      f.provenance.index = index;
      f.provenance.special_values = use_special;
      for (const std::string& t : tags) ++random_count[t];
      all.push_back({"random", std::move(f)});
      ++picked;
    }

    // 5. The default run's programs that reach a feature or coverage cell no fixture above reaches
    // (corpus_reach.h), so replay reaches all a default `lockstep run` does.
    if (options.default_run_count > 0) {
      Reach have;
      for (const CorpusFixture& g : all) have.add(g.fixture.program);
      // Only programs that fit a fixture are candidates (corpus_reach.h); what only larger ones reach stays a gap,
      // which CorpusReach's test then names.
      const DefaultRunReach run = default_run_reach(options.default_run_count, /*fixture_sized_only=*/true);
      RandomPrograms stream(kDefaultRunSeed, default_run_gen_options());
      for (const int64_t index : pick_to_close_the_gap(run, have)) {
        const std::vector<std::string> adds = not_reached(run.by_index[static_cast<size_t>(index)], have);
        have.add(run.by_index[static_cast<size_t>(index)]);
        Fixture f;
        f.program = stream.at(static_cast<uint64_t>(index)).value();
        f.program_json = program_to_json(f.program);
        f.id = content_id("run", f.program_json);
        f.expected = recorded(f.program);
        f.tags = feature_tags(f.program, &f.expected);
        f.semantics = semantics_for(f.tags);
        const bool special = stream.special_values_at(static_cast<uint64_t>(index));
        std::string shown;
        for (size_t k = 0; k < adds.size() && k < 3; ++k) shown += (k ? "; " : "") + adds[k];
        if (adds.size() > 3) shown += fmt::format("; and {} more", adds.size() - 3);
        f.description = fmt::format("Random program {} of the default run (`lockstep run`: seed {}, max size {}{}; {}), "
                                    "kept for what no fixture before it reaches: {}.",
                                    index, kDefaultRunSeed, kDefaultRunMaxSize, special ? ", NaN/Inf values" : "",
                                    describe(program_size(f.program)), shown);
        f.provenance = provenance_of("default_run");
        f.provenance.seed = kDefaultRunSeed;
        f.provenance.index = static_cast<uint64_t>(index);
        all.push_back({"default_run", std::move(f)});
      }
    }
  }
  return all;
}

std::string corpus_coverage_table(const std::vector<CorpusFixture>& all) {
  std::map<std::string, std::map<std::string, int>> counts;  // tag -> folder -> n
  for (const CorpusFixture& g : all)
    for (const std::string& t : g.fixture.tags) ++counts[t][g.folder];
  std::string out;
  auto in_folder = [&](const char* folder) {
    return std::count_if(all.begin(), all.end(), [&](const CorpusFixture& g) { return g.folder == folder; });
  };
  out += fmt::format("{} fixtures: {} named cases, {} gradient-fed, {} op edge points, {} random, {} from the default "
                     "run.\n\n", all.size(), in_folder("cases"), in_folder("gradient_fed"), in_folder("ops"),
                     in_folder("random"), in_folder("default_run"));
  out += "| tag | meaning | cases | gradient_fed | ops | random | default_run | total |\n"
         "|---|---|---:|---:|---:|---:|---:|---:|\n";
  for (const FeatureTagInfo& t : all_feature_tags()) {
    if (t.driver_oracle_only) continue;  // corpus/python-oracle (fixtures/README.md)
    auto& c = counts[t.tag];
    int total = c["cases"] + c["gradient_fed"] + c["ops"] + c["random"] + c["default_run"];
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {}{} |\n", t.tag, t.meaning, c["cases"],
                       c["gradient_fed"], c["ops"], c["random"], c["default_run"], total,
                       total == 0 ? " (NOT COVERED)" : "");
  }
  return out;
}

namespace {

// Whether the recording shows Python's SGD state entry without a momentum buffer (SEM-11.1): an API difference, not
// a value of the semantics.
bool shows_a_state_entry_without_tensors(const Program& program, const Trace& trace) {
  if (!program.optimizer || program.optimizer->kind != OptimizerKind::SGD) return false;
  auto entry_without_buffer = [](const Record& r) {
    for (const ParamObservation& p : r.state.params)
      if (p.state.exists && !p.state.momentum_buffer) return true;
    return false;
  };
  if (entry_without_buffer(trace.init)) return true;
  for (const Record& r : trace.records)
    if (entry_without_buffer(r)) return true;
  return false;
}

bool has_maximize(const std::set<std::string>& features) {
  for (const std::string& f : features)
    if (f.size() > 9 && f.compare(f.size() - 9, 9, ".maximize") == 0) return true;
  return false;
}

}  // namespace

std::vector<CorpusFixture> build_driver_oracle_corpus(
    const std::vector<NamedCase>& cases, const std::function<std::optional<Trace>(const Program&)>& record,
    const FixtureProvenance& provenance, std::shared_ptr<const FeatureScope> scope, uint64_t seed, int count) {
  std::vector<CorpusFixture> all;
  for (const NamedCase& c : cases) {
    std::optional<Trace> trace = record(c.program);
    if (!trace) throw std::runtime_error("the oracle declined named case " + c.id);
    Fixture f;
    f.id = c.id;
    f.description = c.description + (c.claim.empty() ? "" : " Claim: " + c.claim);
    f.semantics = c.semantics;
    f.program = c.program;
    f.program_json = program_to_json(c.program);
    f.expected = std::move(*trace);
    f.tags = merge_tags(feature_tags(c.program, &f.expected), c.tags);
    f.provenance = provenance;
    f.provenance.generator = "named_case";
    f.provenance.source = "conformance/cases-python-oracle/" + files::file_name(c.file);
    all.push_back({"python-oracle", std::move(f)});
  }
  GenOptions gen = fixture_sized();
  gen.maximize = true;
  gen.scope = std::move(scope);
  RandomPrograms stream(seed, gen);
  std::set<std::string> ids;
  int picked = 0;
  for (uint64_t index = 0; index < 4000 && picked < count; ++index) {
    const Program p = stream.at(index).value();
    const ProgramSize size = program_size(p);
    if (size.elements > 40 || size.actions > 14 || !has_maximize(program_features(p))) continue;
    std::optional<Trace> trace = record(p);
    if (!trace || shows_a_state_entry_without_tensors(p, *trace)) continue;
    Fixture f;
    f.program = p;
    f.program_json = program_to_json(p);
    f.id = content_id("max", f.program_json);
    if (!ids.insert(f.id).second) continue;
    f.tags = feature_tags(p, &*trace);
    f.expected = std::move(*trace);
    f.semantics = semantics_for(f.tags);
    f.semantics.push_back("SEM-20.1");
    f.description = fmt::format("Random program {} of seed {} with maximize, recorded by {} {} ({}).", index, seed,
                                provenance.oracle, provenance.oracle_version, describe(size));
    f.provenance = provenance;
    f.provenance.generator = "random";
    f.provenance.seed = seed;
    f.provenance.index = index;
    all.push_back({"python-oracle", std::move(f)});
    ++picked;
  }
  return all;
}

}  // namespace lockstep
