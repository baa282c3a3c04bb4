//===- HoistTileAccumulators.h - Accumulators of vector tiles in registers ===//
//
// An MLIR 22 workaround (src/passes/workarounds/HoistTileAccumulators.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KINA_PASSES_WORKAROUNDS_HOISTTILEACCUMULATORS_H
#define KINA_PASSES_WORKAROUNDS_HOISTTILEACCUMULATORS_H

namespace mlir {
class Operation;
} // namespace mlir

namespace kina {

/// Moves each vector.transfer_read / vector.transfer_write pair of an
/// scf.for under `root` that reads and writes the same buffer at the same
/// loop-invariant indices (a reduction's or contraction's output tile) out
/// of the loop: the read before it, the write after it, the value carried
/// as an iter_arg. Only loops whose bodies touch memory through vector
/// transfers alone (the loops kina-tile-and-vectorize builds around one
/// vectorised linalg op) and where no other op of the loop uses that
/// buffer. Repeats until no pair is left, so an accumulator leaves every
/// loop nest it is invariant in.
void hoistTileAccumulators(mlir::Operation *root);

} // namespace kina

#endif // KINA_PASSES_WORKAROUNDS_HOISTTILEACCUMULATORS_H
