// lockstep: the command line (tools/run_main.h) with its own engines, impl and the LibTorch oracle.
#include "tools/run_main.h"

int main(int argc, char** argv) { return lockstep::run_main(argc, argv); }
