// impl/kernel_clones.h: LOCKSTEP_FMA_KERNEL, the attribute of the optimizers' one-pass loops (sgd.cc,
// adam.cc) that compiles them twice and picks one at load time.
//
// The loops use std::fma exactly where LibTorch 1.13 fuses a multiply and an add (measured black-box, see
// the comments at each std::fma). On x86-64 with GCC the vector clone is built for x86-64-v3 (AVX2 + FMA):
// std::fma is then one vfmadd instruction and the loop vectorises; the default clone stays correct (std::fma
// is the correctly rounded libm call there, bit-identical, only slower). Elsewhere there is one build.
//
// Example:
//   template <class T>
//   LOCKSTEP_FMA_KERNEL void pass(T* __restrict p, const T* __restrict g, int64_t n, T neg_lr) {
//     for (int64_t i = 0; i < n; ++i) p[i] = std::fma(neg_lr, g[i], p[i]);
//   }
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define LOCKSTEP_FMA_KERNEL __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define LOCKSTEP_FMA_KERNEL
#endif
