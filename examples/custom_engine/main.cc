// my-lockstep: the lockstep command line (run, trace, replay, merge, matrix, reports) with this framework's engines.
#include "tiny_engine.h"
#include "tools/run_main.h"

int main(int argc, char** argv) {
  return lockstep::run_main(argc, argv, {{"tiny", [] { return make_tiny_engine(false); }},
                                         {"tiny-steps-twice", [] { return make_tiny_engine(true); }}});
}
