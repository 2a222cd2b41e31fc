// lockstep-impl-driver: impl (the clean-room implementation) as a driver speaking fixtures/PROTOCOL.md.
//
// Reads one request per line on stdin, {"id": ID, "program": PROGRAM}, runs the program on a fresh impl
// engine and writes {"id": ID, "trace": TRACE} on one line of stdout, flushed, in order; exits 0 at end of
// input. A request it cannot read is a protocol error: it names the problem on stderr and exits 2 (the
// harness reports that case as failed and restarts the driver for the next one). The hello line lockstep
// writes first ({"id": "lockstep-hello", "hello": {...}}) is answered with
// {"id": "lockstep-hello", "hello": {"name": "impl", "version": "lockstep-impl-driver", "protocol": 8}} (the name is
// "impl+MUTANT" with --mutant, the variant's engine name with --variant).
//
//   lockstep replay --engine "$PWD/build/lockstep-impl-driver"
//   lockstep-impl-driver --unsupported amsgrad      # answers "unsupported" for programs tagged amsgrad
//   lockstep-impl-driver --variant unfused          # a legitimate variant (tools/variants/variants.h)
//   lockstep-impl-driver --mutant zero_grad_noop    # a deliberate bug of impl (tools/mutants/mutants.h)
//
// Options (for tests of the harness): --unsupported TAG (repeatable) answers {"unsupported": TAG} for any
// program whose feature tags (conformance/run/fixture.h) include TAG; --variant NAME runs every program on
// that variant of impl instead of impl itself (an unknown NAME: usage error, exit 2, naming the variants).
// --hello JSON merges a JSON object into the hello answer (e.g. '{"supports": {"dtypes": ["float32"]}}':
// declared, not enforced); --zero-grad-default none|zero makes zero_grad() with no argument set grads to none
// (PyTorch >= 2.0) or zero them (1.x), and declares it with a matching "pytorch_version" ("2.0" / "1.13") unless
// --hello gives one (SEMANTICS §12.1), and follows that version in everything it models (SEMANTICS §12.6); without
// it the driver follows the LibTorch lockstep was built with, zero_grad()'s default included. The hello always declares the default
// ("defaults": {"zero_grad": ...}), so the driver is held to what it does against a LibTorch 2.x oracle too,
// and every optional trace field it reports ("observes", conformance/program/optional_fields.h).
#include <algorithm>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "conformance/program/optional_fields.h"
#include "conformance/run/driver_process.h"
#include "conformance/run/fixture.h"
#include "conformance/run/interpreter.h"
#include "conformance/run/zero_grad_default.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/program_json.h"
#include "conformance/program/trace_json.h"
#include "impl/engine_adapter.h"
#include "tools/mutants/mutants.h"
#include "tools/variants/variants.h"

int main(int argc, char** argv) {
  using namespace lockstep;
  std::vector<std::string> unsupported;
  std::string variant;  // empty: impl itself
  std::string mutant;   // empty: none (tools/mutants/mutants.h)
  nlohmann::ordered_json hello_extra = nlohmann::ordered_json::object();
  // impl follows the LibTorch lockstep was built with (ImplVersion, SEM-12.6): its zero_grad() default too, unless
  // --zero-grad-default says otherwise.
  bool default_none = oracle_build_version().major >= 2;
  bool declare_default = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--unsupported") == 0 && i + 1 < argc) {
      unsupported.push_back(argv[++i]);
    } else if (std::strcmp(argv[i], "--variant") == 0 && i + 1 < argc) {
      variant = argv[++i];
      try {
        make_variant_engine(variant);
      } catch (const std::invalid_argument& e) {
        std::cerr << "lockstep-impl-driver: " << e.what() << "\n";
        return 2;
      }
    } else if (std::strcmp(argv[i], "--mutant") == 0 && i + 1 < argc) {
      mutant = argv[++i];
      try {
        make_mutant_engine(mutant);
      } catch (const std::invalid_argument& e) {
        std::cerr << "lockstep-impl-driver: " << e.what() << "\n";
        return 2;
      }
    } else if (std::strcmp(argv[i], "--hello") == 0 && i + 1 < argc) {
      try {
        hello_extra = nlohmann::ordered_json::parse(argv[++i]);
      } catch (const std::exception& e) {
        std::cerr << "lockstep-impl-driver: --hello: not JSON: " << e.what() << "\n";
        return 2;
      }
      if (!hello_extra.is_object()) {
        std::cerr << "lockstep-impl-driver: --hello: expected a JSON object\n";
        return 2;
      }
    } else if (std::strcmp(argv[i], "--zero-grad-default") == 0 && i + 1 < argc) {
      const std::string v = argv[++i];
      if (v != "none" && v != "zero") {
        std::cerr << "lockstep-impl-driver: --zero-grad-default: expected none or zero\n";
        return 2;
      }
      default_none = v == "none";
      declare_default = true;
    } else {
      std::cerr << "usage: lockstep-impl-driver [--unsupported TAG]... [--variant NAME | --mutant NAME] [--hello JSON]\n"
                   "                            [--zero-grad-default none|zero]\n"
                   "Speaks the lockstep driver protocol (fixtures/PROTOCOL.md) on stdin/stdout.\n"
                   "Variants: " << variant_names_joined() << "\n";
      return 2;
    }
  }
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::string id;
    Program program;
    try {
      nlohmann::ordered_json request = parse_json_text(line, 512);
      if (request.is_object() && request.contains("hello")) {  // the start-up handshake (PROTOCOL.md 2a)
        nlohmann::ordered_json answer;
        answer["id"] = "lockstep-hello";
        // The engine's own name: "impl", "impl+MUTANT", or the variant's, so that reports (and the conformance
        // matrix) keep a mutant or a variant apart from impl itself.
        const std::string name = !variant.empty() ? make_variant_engine(variant)->name()
                                 : mutant.empty()  ? make_impl_engine()->name()
                                                   : make_mutant_engine(mutant)->name();
        // The protocol: the newest both speak (2: RMSprop and Adagrad; 3: softplus; 4: a step's closure; 5: L-BFGS;
        // 6: gradient clipping; 7: optimizer checkpoints; fixtures/PROTOCOL.md 2a).
        int protocol = kDriverProtocolVersion;
        if (const auto& h = request["hello"]; h.is_object() && h.contains("protocol") && h["protocol"].is_number_integer())
          protocol = std::min(protocol, h["protocol"].get<int>());
        answer["hello"] = {{"name", name}, {"version", "lockstep-impl-driver"}, {"protocol", protocol}, {"language", "c++"}};
        // What zero_grad() does here is always declared (an undeclared default is taken to be the oracle's,
        // which is "none" with LibTorch 2.x).
        // The version it follows, always: the one chosen, else the LibTorch lockstep was built with (SEMANTICS 12.6).
        const ImplVersion follows =
            declare_default ? (default_none ? ImplVersion{2, 0} : ImplVersion{1, 13}) : oracle_build_version();
        answer["hello"]["pytorch_version"] = std::to_string(follows.major) + "." + std::to_string(follows.minor);
        answer["hello"]["defaults"] = {{"zero_grad", default_none ? "none" : "zero"}};
        // Its traces are impl engine's, which reports every optional field (optional_fields.h).
        nlohmann::ordered_json observes = nlohmann::ordered_json::array();
        for (const OptionalField& f : optional_fields()) observes.push_back(f.name);
        answer["hello"]["observes"] = std::move(observes);
        for (const auto& [key, value] : hello_extra.items()) answer["hello"][key] = value;
        std::cout << answer.dump() << "\n" << std::flush;
        continue;
      }
      JsonObjectReader r(request, "", "a request");
      id = r.string("id");
      const nlohmann::ordered_json& program_json = r.required("program");
      r.finish(false);
      program = program_from_json(program_json);
    } catch (const ProgramError& e) {
      std::cerr << "lockstep-impl-driver: request " << id << ": /program" << e.path() << ": " << e.what() << "\n";
      return 2;
    } catch (const std::exception& e) {
      std::cerr << "lockstep-impl-driver: bad request: " << e.what() << "\n";
      return 2;
    }
    nlohmann::ordered_json answer;
    answer["id"] = id;
    std::string skip;
    if (!unsupported.empty()) {
      for (const std::string& tag : feature_tags(program))
        for (const std::string& u : unsupported)
          if (tag == u && skip.empty()) skip = u;
    }
    if (!skip.empty()) {
      answer["unsupported"] = skip;
    } else {
      std::unique_ptr<Engine> engine =
          !variant.empty() ? make_variant_engine(variant)
          : !mutant.empty()  ? make_mutant_engine(mutant, default_none)
          : declare_default  ? make_impl_engine_following(default_none ? ImplVersion{2, 0} : ImplVersion{1, 13})
                             : make_impl_engine(default_none);
      // A variant is impl following the LibTorch lockstep was built with (ImplVersion); its zero_grad() is the
      // default this driver declares.
      if (!variant.empty() && engine->zero_grad_sets_to_none_by_default() != default_none)
        engine = with_zero_grad_default(std::move(engine), default_none);
      answer["trace"] = trace_to_json(run_program(program, *engine));
    }
    std::cout << answer.dump() << "\n" << std::flush;
  }
  return 0;
}
