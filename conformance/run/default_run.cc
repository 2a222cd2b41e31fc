#include "conformance/run/default_run.h"

#include "conformance/generate/generators.h"

namespace lockstep {

GenOptions default_run_gen_options() {
  GenOptions gen;
  gen.max_size = kDefaultRunMaxSize;
  gen.special_values_every = kDefaultRunSpecialValuesEvery;
  return gen;
}

}  // namespace lockstep
