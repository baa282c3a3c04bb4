//===- MLIRGenImpl.h - Private state and helpers of the MLIR generator ----===//
//
// The generator behind `kina::mlirGen` (MLIRGen.h), shared by the files of
// src/lowering/MLIRGen*.cpp: MLIRGen.cpp holds functions, calls, constants,
// run-time checks and the dispatch of statements; MLIRGenElementwise.cpp the
// NumPy broadcasting and the elementwise ops; MLIRGenScalar.cpp the scalar
// semantics of every elementwise op (the spec's operation table, NumPy as
// the reference); MLIRGenContract.cpp matmul, reductions, argmax/argmin,
// softmax, layer_norm and rms_norm; MLIRGenLayout.cpp transpose, reshape,
// concat, slice and gather. Everything here is private to the lowering
// library.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_LOWERING_MLIRGENIMPL_H
#define KINA_LOWERING_MLIRGENIMPL_H

#include "kina/AST.h"
#include "kina/MLIRGen.h"
#include "kina/OpTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace kina {
namespace detail {

//===----------------------------------------------------------------------===//
// Scalar semantics (MLIRGenScalar.cpp). Each takes and returns scalars of
// the Kina element type (f16/bf16 are widened to f32 inside and narrowed
// back), and returns a null Value when the op is not defined on the type.
//===----------------------------------------------------------------------===//

/// The MLIR element type of a Kina element type (signless integers).
mlir::Type toMLIRType(mlir::MLIRContext &ctx, ElementType t);
/// f16 and bf16 compute and accumulate in f32.
inline bool computesInF32(ElementType t) {
  return t == ElementType::F16 || t == ElementType::BF16;
}
/// The type arithmetic on `t` is carried out in (f32 for f16/bf16).
mlir::Type computeType(mlir::MLIRContext &ctx, ElementType t);
/// `arith.constant` of an integer type (the value is truncated to its width).
mlir::Value constInt(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                     int64_t value);
/// `arith.constant` of a float type (the double is rounded to nearest).
mlir::Value constFloat(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                       double value);
/// The attribute of a scalar of element type `t` (ints take `intValue`,
/// truncated to the width; floats `floatValue`, rounded to nearest).
mlir::TypedAttr scalarAttr(mlir::MLIRContext &ctx, ElementType t,
                           int64_t intValue, double floatValue);
/// `arith.constant` of `value` in the element type `t` (ints take
/// `intValue`, floats `floatValue`).
mlir::Value constScalar(mlir::OpBuilder &b, mlir::Location loc, ElementType t,
                        int64_t intValue, double floatValue);
/// extf to f32 for f16/bf16, identity otherwise.
mlir::Value widen(mlir::OpBuilder &b, mlir::Location loc, ElementType t,
                  mlir::Value x);
/// truncf from f32 to f16/bf16, identity otherwise.
mlir::Value narrow(mlir::OpBuilder &b, mlir::Location loc, ElementType t,
                   mlir::Value x);

/// neg abs exp log sqrt rsqrt tanh sigmoid relu gelu erf sin cos floor ceil
/// not; `geluTanh` selects gelu's tanh approximation.
mlir::Value emitUnary(mlir::OpBuilder &b, mlir::Location loc,
                      llvm::StringRef op, ElementType t, mlir::Value x,
                      bool geluTanh);
/// add sub mul div mod pow max min on two scalars of type `t`.
mlir::Value emitBinary(mlir::OpBuilder &b, mlir::Location loc,
                       llvm::StringRef op, ElementType t, mlir::Value x,
                       mlir::Value y);
/// eq ne lt le gt ge on two scalars of type `t`; an i1 result.
mlir::Value emitCompare(mlir::OpBuilder &b, mlir::Location loc,
                        llvm::StringRef op, ElementType t, mlir::Value x,
                        mlir::Value y);
/// The spec's `cast` row from `from` to `to`.
mlir::Value emitCast(mlir::OpBuilder &b, mlir::Location loc, ElementType from,
                     ElementType to, mlir::Value x);

/// The reductions' combining step and identity, on the accumulator type
/// (computeType of the element type): sum, prod, max, min.
mlir::Value emitCombine(mlir::OpBuilder &b, mlir::Location loc,
                        llvm::StringRef kind, ElementType t, mlir::Value acc,
                        mlir::Value x);
mlir::Value emitReductionInit(mlir::OpBuilder &b, mlir::Location loc,
                              llvm::StringRef kind, ElementType t);

//===----------------------------------------------------------------------===//
// The generator.
//===----------------------------------------------------------------------===//

/// A Kina SSA value while its function is generated: the MLIR tensor and the
/// Kina type Sema inferred for it (which says which dims are provably equal).
struct GenValue {
  mlir::Value value;
  TensorType type;
};

/// An operand of an elementwise op: a tensor, or a literal already
/// materialised as a scalar `arith.constant` (then `tensor` is null and
/// `type` is rank 0).
struct EwOperand {
  mlir::Value tensor;
  TensorType type;
  mlir::Value scalar;
};

/// How one operand dim reads the iteration space of a broadcast.
enum class DimRead {
  Identity, ///< the operand dim equals the output dim
  Zero,     ///< static 1 stretched: read index 0
  Stretch,  ///< may be 1 at run time: materialise the stretched operand
};

/// One operand taking part in a broadcast: its dims `dims` (indices into
/// the operand, in order) are aligned right with the output dims.
struct BroadcastInput {
  const GenValue *value = nullptr;
  llvm::SmallVector<int64_t> dims;
  unsigned operandNo = 0;
  llvm::SmallVector<DimRead> reads; ///< Filled by `broadcast`.
};

/// Builds a scalar result from the scalars of the operands (in operand
/// order) inside a linalg.generic body.
using ScalarBody = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, llvm::ArrayRef<mlir::Value>)>;

/// The type inference gave result `i` of `s`, before an annotation refined
/// a `?` (Statement::inferredTypes): ops are built with this shape and
/// Generator::define checks the refinement at run time.
inline const TensorType &inferredType(const Statement &s, size_t i) {
  return i < s.inferredTypes.size() ? s.inferredTypes[i] : s.resultTypes[i];
}

class Generator {
public:
  Generator(mlir::MLIRContext &ctx, const Module &module,
            const MLIRGenOptions &options);
  mlir::OwningOpRef<mlir::ModuleOp> run();

  // --- MLIRGen.cpp: functions and statements ------------------------------
private:
  mlir::LogicalResult genFunction(const Function &fn);
  mlir::LogicalResult genStatement(const Statement &s);
  mlir::LogicalResult genCall(const Statement &s);
  mlir::LogicalResult genReturn(const Function &fn);
  mlir::LogicalResult genConstant(const Statement &s);
  mlir::LogicalResult genIota(const Statement &s);

public:
  // --- Shared helpers (MLIRGen.cpp) ---------------------------------------
  mlir::RankedTensorType tensorType(const TensorType &t);
  mlir::RankedTensorType tensorType(const TensorType &t, mlir::Type elem);
  mlir::Value indexConst(mlir::Location loc, int64_t v);
  /// Size of dim `i` of `v` as an index: a constant when static, the
  /// function's value of the symbol when symbolic, else tensor.dim.
  mlir::Value dimOf(mlir::Location loc, const GenValue &v, int64_t i);
  /// The index value of an output dim known without operands: static size
  /// or bound symbol; null for `?` and unbound symbols.
  mlir::Value knownDim(mlir::Location loc, const Dim &d);
  /// tensor.empty of `type`; `dims` holds one index per dim (entries for
  /// static dims are ignored and may be null).
  mlir::Value emptyTensor(mlir::Location loc, mlir::RankedTensorType type,
                          llvm::ArrayRef<mlir::Value> dims);
  /// tensor.empty + linalg.fill with `scalar`.
  mlir::Value filledTensor(mlir::Location loc, mlir::RankedTensorType type,
                           llvm::ArrayRef<mlir::Value> dims,
                           mlir::Value scalar);
  /// `func.call @__kina_check(%ok, %a, %b) {kina.message = "LOC: what"}`;
  /// `what` may use {0} and {1} for %a and %b.
  void emitCheck(mlir::Location loc, mlir::Value ok, mlir::Value a,
                 mlir::Value b, const llvm::Twine &what);
  /// `tensor.cast` when the types differ.
  mlir::Value castTo(mlir::Location loc, mlir::Value v, mlir::Type type);
  /// The operand's value; a literal becomes a rank-0 tensor constant.
  GenValue operandValue(const Operand &o);
  /// The operand for an elementwise op (literals stay scalars).
  EwOperand ewOperand(mlir::Location loc, const Operand &o);
  /// Records result `i` of `s`, cast to the MLIR type of its Sema type.
  void define(const Statement &s, size_t i, mlir::Value v);
  /// Integer attribute `name` of `s`, or `dflt`.
  int64_t intAttr(const Statement &s, llvm::StringRef name, int64_t dflt);
  bool boolAttr(const Statement &s, llvm::StringRef name, bool dflt);
  /// A linalg.generic on tensors; returns its results.
  llvm::SmallVector<mlir::Value>
  generic(mlir::Location loc, mlir::TypeRange resultTypes,
          mlir::ValueRange inputs, mlir::ValueRange outputs,
          llvm::ArrayRef<mlir::AffineMap> maps, unsigned numLoops,
          llvm::ArrayRef<unsigned> reductionLoops,
          llvm::function_ref<void(mlir::OpBuilder &, mlir::Location,
                                  mlir::ValueRange)>
              body);
  /// `tensor.expand_shape` of a reduced tensor back to rank `keptRank`
  /// with unit dims at `unitDims` (sorted); `outDims` one index per result
  /// dim of the reduced tensor.
  mlir::Value expandUnitDims(mlir::Location loc, mlir::Value reduced,
                             mlir::RankedTensorType resultType,
                             llvm::ArrayRef<int64_t> unitDims,
                             llvm::ArrayRef<mlir::Value> reducedDims);

  // --- MLIRGenElementwise.cpp ---------------------------------------------
  /// NumPy broadcasting of `inputs` against `outDims`: fills `outVals` (one
  /// index per output dim) and each input's `reads`, emitting the run-time
  /// checks of dims that are not provably compatible.
  void broadcast(mlir::Location loc, llvm::StringRef op,
                 llvm::ArrayRef<Dim> outDims,
                 llvm::MutableArrayRef<BroadcastInput> inputs,
                 llvm::SmallVectorImpl<mlir::Value> &outVals);
  /// Materialises `in` with its Stretch dims expanded to the output dims
  /// (`outDims`/`outVals`, aligned right with in.dims); the result reads
  /// Identity there.
  GenValue stretch(mlir::Location loc, BroadcastInput &in,
                   llvm::ArrayRef<Dim> outDims,
                   llvm::ArrayRef<mlir::Value> outVals);
  /// The indexing map of a broadcast input over `numLoops` loops whose
  /// aligned dims start at loop `firstLoop`; `extra` appends loop dims for
  /// the operand's dims after the broadcast ones.
  mlir::AffineMap broadcastMap(const BroadcastInput &in, unsigned numLoops,
                               unsigned firstLoop, unsigned alignedRank,
                               llvm::ArrayRef<unsigned> extraLoops = {});
  /// One linalg.generic computing `body` elementwise with broadcasting.
  mlir::Value genElementwise(const Statement &s,
                             llvm::ArrayRef<EwOperand> operands,
                             const TensorType &outType, ScalarBody body);
  mlir::LogicalResult genUnary(const Statement &s);
  mlir::LogicalResult genBinary(const Statement &s);
  mlir::LogicalResult genCompare(const Statement &s);
  mlir::LogicalResult genSelect(const Statement &s);
  mlir::LogicalResult genCast(const Statement &s);
  mlir::LogicalResult genBroadcastTo(const Statement &s);

  // --- MLIRGenContract.cpp ------------------------------------------------
  mlir::LogicalResult genMatmul(const Statement &s);
  mlir::LogicalResult genReduction(const Statement &s);
  mlir::LogicalResult genArgReduction(const Statement &s);
  mlir::LogicalResult genSoftmax(const Statement &s);
  /// Checks that each dynamic dim in `dims` of `v` is > 0 (max/min/argmax
  /// over an empty extent); static 0 is a located error.
  mlir::LogicalResult checkNonEmpty(const Statement &s, const GenValue &v,
                                    llvm::ArrayRef<int64_t> dims);

  /// layer_norm and rms_norm (over the dims from `axis` to the last).
  mlir::LogicalResult genNorm(const Statement &s);

  // --- MLIRGenLayout.cpp --------------------------------------------------
  mlir::LogicalResult genTranspose(const Statement &s);
  mlir::LogicalResult genReshape(const Statement &s);
  mlir::LogicalResult genConcat(const Statement &s);
  mlir::LogicalResult genSlice(const Statement &s);
  mlir::LogicalResult genGather(const Statement &s);

  mlir::MLIRContext &ctx;
  const Module &kmodule;
  const MLIRGenOptions &options;
  mlir::OpBuilder builder;
  mlir::ModuleOp module;
  /// Values of the function being generated, by Kina name.
  llvm::StringMap<GenValue> values;
  /// Names whose statement failed: later uses are skipped silently.
  llvm::StringSet<> failedNames;
  /// Symbolic dims of the function being generated, bound at entry.
  llvm::StringMap<mlir::Value> symbols;
  /// Index constants and tensor.dim results of the function being
  /// generated, reused: its body is one block in program order. Not a
  /// DenseMap: every int64_t is a valid key (a slice's stop is often
  /// INT64_MAX, DenseMap's reserved empty key).
  std::unordered_map<int64_t, mlir::Value> indexConsts;
  llvm::DenseMap<std::pair<mlir::Value, int64_t>, mlir::Value> dimCache;
  bool checkDeclared = false;
};

/// "file:line:col" of a location (the first FileLineColLoc inside it).
std::string locationPrefix(mlir::Location loc);

} // namespace detail
} // namespace kina

#endif // KINA_LOWERING_MLIRGENIMPL_H
